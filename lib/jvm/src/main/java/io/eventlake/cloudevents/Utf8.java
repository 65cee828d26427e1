package io.eventlake.cloudevents;

/** UTF-8 well-formedness (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF). */
final class Utf8 {
  private Utf8() {}

  /** True when {@code bytes} is well-formed UTF-8; a tight ASCII loop settles most text. */
  static boolean isValid(byte[] bytes) {
    return isValid(bytes, 0, bytes.length);
  }

  /** True when {@code bytes[from, to)} is well-formed UTF-8. */
  static boolean isValid(byte[] bytes, int from, int to) {
    int i = from;
    int n = to;
    while (i < n) {
      int b = bytes[i];
      if (b >= 0) {
        i++;
        continue;
      }
      b &= 0xFF;
      if (b < 0xC2) {
        return false; // a continuation byte first, or an overlong two-byte form
      } else if (b < 0xE0) {
        if (i + 1 >= n || !continuation(bytes[i + 1])) {
          return false;
        }
        i += 2;
      } else if (b < 0xF0) {
        if (i + 2 >= n || !continuation(bytes[i + 1]) || !continuation(bytes[i + 2])) {
          return false;
        }
        int second = bytes[i + 1] & 0xFF;
        if (b == 0xE0 && second < 0xA0) {
          return false; // overlong
        }
        if (b == 0xED && second >= 0xA0) {
          return false; // a UTF-16 surrogate encoded as UTF-8
        }
        i += 3;
      } else if (b < 0xF5) {
        if (i + 3 >= n
            || !continuation(bytes[i + 1])
            || !continuation(bytes[i + 2])
            || !continuation(bytes[i + 3])) {
          return false;
        }
        int second = bytes[i + 1] & 0xFF;
        if (b == 0xF0 && second < 0x90) {
          return false; // overlong
        }
        if (b == 0xF4 && second >= 0x90) {
          return false; // above U+10FFFF
        }
        i += 4;
      } else {
        return false;
      }
    }
    return true;
  }

  private static boolean continuation(byte b) {
    return (b & 0xC0) == 0x80;
  }
}
