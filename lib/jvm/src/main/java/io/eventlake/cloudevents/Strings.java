package io.eventlake.cloudevents;

/** The core specification's String type: which characters it allows. */
final class Strings {
  private Strings() {}

  /**
   * False when {@code text} holds a control character (U+0000-U+001F, U+007F-U+009F), a
   * Unicode noncharacter (U+FDD0-U+FDEF, U+xFFFE, U+xFFFF) or an unpaired surrogate.
   */
  static boolean allowed(String text) {
    int n = text.length();
    for (int i = 0; i < n; i++) {
      char c = text.charAt(i);
      if (c < 0x7F) {
        if (c < 0x20) {
          return false;
        }
        continue;
      }
      if (c <= 0x9F) {
        return false;
      }
      if (Character.isHighSurrogate(c)) {
        if (i + 1 >= n || !Character.isLowSurrogate(text.charAt(i + 1))) {
          return false;
        }
        int codePoint = Character.toCodePoint(c, text.charAt(i + 1));
        if ((codePoint & 0xFFFE) == 0xFFFE) {
          return false;
        }
        i++;
      } else if (Character.isLowSurrogate(c)) {
        return false;
      } else if ((c >= 0xFDD0 && c <= 0xFDEF) || c >= 0xFFFE) {
        return false;
      }
    }
    return true;
  }

  /** At most {@code max} characters, never cutting a surrogate pair in two. */
  static String truncate(String text, int max) {
    if (text.length() <= max) {
      return text;
    }
    int end = Character.isHighSurrogate(text.charAt(max - 1)) ? max - 1 : max;
    return text.substring(0, end);
  }
}
