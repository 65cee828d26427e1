package io.eventlake.cloudevents;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The headers of one Kafka record as the receiver side reads them, in one pass: the
 * {@code content-type} (the first one, and how many there are), the {@code ce_} headers'
 * names (without the prefix) and values in record order, and whether any of these has no
 * value or is not UTF-8. Which of these facts makes a reject is {@link KafkaBinding}'s
 * to say.
 */
final class BindingHeaders {
  int contentTypeCount;
  byte[] contentTypeBytes;
  boolean badEncoding;
  final List<String> ceNames = new ArrayList<>();
  final List<byte[]> ceValues = new ArrayList<>();

  private BindingHeaders() {}

  /**
   * Reads a record's headers.
   *
   * @param headerKeys header keys in record order (a key may repeat)
   * @param headerValues header values in the same order, null for a header without value
   * @param headerCount how many of the arrays' entries are headers
   */
  static BindingHeaders read(String[] headerKeys, byte[][] headerValues, int headerCount) {
    // One pass over the headers: content-type, ce_ names and values, and what is wrong.
    BindingHeaders headers = new BindingHeaders();
    for (int i = 0; i < headerCount; i++) {
      String key = headerKeys[i];
      byte[] headerValue = headerValues[i];
      if (key.equals(KafkaBinding.CONTENT_TYPE)) {
        headers.contentTypeCount++;
        if (headers.contentTypeCount == 1) {
          headers.contentTypeBytes = headerValue;
        }
        headers.badEncoding |= headerValue == null || !Utf8.isValid(headerValue);
      } else if (key.startsWith(KafkaBinding.CE_PREFIX)) {
        String name = key.substring(KafkaBinding.CE_PREFIX.length());
        headers.ceNames.add(name);
        headers.ceValues.add(headerValue);
        // A key that was not UTF-8 arrives with U+FFFD for its bad bytes.
        headers.badEncoding |=
            headerValue == null || !Utf8.isValid(headerValue) || name.indexOf('\uFFFD') >= 0;
      }
    }
    return headers;
  }

  /** The first content-type header's text; null when there is none. */
  String contentType() {
    return contentTypeBytes == null ? null : new String(contentTypeBytes, StandardCharsets.UTF_8);
  }

  /** Names that occur more than once, each once, in order of first occurrence. */
  static List<String> duplicates(List<String> names) {
    Set<String> seen = new HashSet<>();
    Set<String> repeated = new LinkedHashSet<>();
    for (String name : names) {
      if (!seen.add(name)) {
        repeated.add(name);
      }
    }
    return new ArrayList<>(repeated);
  }
}
