package io.eventlake.cloudevents;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

/**
 * String tokens read from the input's bytes instead of through Jackson's decoder, when
 * they need no decoding: no escape, so the bytes between the quotes are the string's UTF-8
 * as is. Jackson then skips the token rather than decoding it char by char, and a writer
 * can copy the bytes back ({@link JsonEvent}'s sorted {@code data}) instead of escaping
 * the string again. The long free-text fields of event data are mostly such strings.
 *
 * <p>Offsets come from the parser's token location (bytes from the input's start, a byte
 * order mark included). Anything unexpected (no byte offsets, no quote there, an escape, a
 * control character, ill-formed UTF-8, no closing quote) falls back to the parser's text.
 */
final class PlainStrings {
  private PlainStrings() {}

  /**
   * The index of the closing quote of the string whose content starts at {@code start},
   * when the content is plain (no escape, no control character, well-formed UTF-8); -1
   * otherwise.
   */
  static int end(byte[] input, int start) {
    boolean ascii = true;
    for (int i = start; i < input.length; i++) {
      int b = input[i] & 0xFF;
      if (PLAIN[b]) {
        continue;
      }
      if (b == '"') {
        return ascii || Utf8.isValid(input, start, i) ? i : -1;
      }
      if (b < 0x80) {
        return -1; // a backslash or a control character
      }
      ascii = false;
    }
    return -1;
  }

  /**
   * The bytes that are plain ASCII string content: no quote, backslash or control
   * character. A table, as Jackson's own scanner has, keeps the loop one load and one
   * branch a byte (the drivers run with a shallow inlining limit, see spark.py).
   */
  private static final boolean[] PLAIN = new boolean[256];

  static {
    for (int b = 0x20; b < 0x80; b++) {
      PLAIN[b] = b != '"' && b != '\\';
    }
  }

  /** The first byte of the string token's content, or -1 when the offset is not usable. */
  static int start(JsonParser parser, byte[] input) {
    if (parser.currentToken() != JsonToken.VALUE_STRING) {
      return -1;
    }
    long offset = parser.currentTokenLocation().getByteOffset();
    if (offset < 0) {
      return -1; // not read as UTF-8 bytes (Jackson detected UTF-16 or UTF-32)
    }
    if (offset >= input.length || input[(int) offset] != '"') {
      return -1;
    }
    return (int) offset + 1;
  }
}
