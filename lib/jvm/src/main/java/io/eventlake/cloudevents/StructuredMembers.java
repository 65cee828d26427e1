package io.eventlake.cloudevents;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.HashSet;
import java.util.Set;

/**
 * What the sender needs from a structured record's JSON object: the {@code time}
 * member's text, the member names, and where the {@code data} member's value lies in the
 * bytes.
 */
final class StructuredMembers {
  String time;

  /** The object's member names, null-valued ones included. */
  final Set<String> names = new HashSet<>();

  /** The data member's value with the whitespace after it: [dataStart, dataEnd). */
  int dataStart = -1;

  int dataEnd = -1;

  boolean hasDataSpan() {
    return dataStart >= 0 && dataEnd > dataStart;
  }

  /**
   * Reads a structured value the decoder accepted as a valid event.
   *
   * @throws IllegalStateException when it is not a JSON object (the decoder would have
   *     rejected it)
   */
  static StructuredMembers read(byte[] value) {
    StructuredMembers members = new StructuredMembers();
    try (JsonParser parser = JsonEvent.FACTORY.createParser(value)) {
      if (parser.nextToken() != JsonToken.START_OBJECT) {
        throw new IOException("not a JSON object");
      }
      JsonToken token = parser.nextToken();
      while (token == JsonToken.FIELD_NAME) {
        String name = parser.currentName();
        members.names.add(name);
        JsonToken valueToken = parser.nextToken();
        long valueStart = parser.currentTokenLocation().getByteOffset();
        if (name.equals("time") && valueToken == JsonToken.VALUE_STRING) {
          members.time = parser.getText();
        }
        parser.skipChildren();
        token = parser.nextToken();
        if (name.equals(KafkaBinding.DATA) && valueToken != JsonToken.VALUE_NULL) {
          members.setDataSpan(value, valueStart, parser.currentTokenLocation().getByteOffset(),
              valueToken);
        }
      }
      if (token != JsonToken.END_OBJECT) {
        throw new IOException("unexpected " + token);
      }
    } catch (IOException | RuntimeException e) {
      throw new IllegalStateException(
          "a structured record the decoder accepted is not a JSON object", e);
    }
    return members;
  }

  /**
   * The data member's value from its first byte to the {@code ,} or {@code }} that
   * ends it. Only the parser's offsets are used, and only when the bytes at both ends
   * are what the tokens say; otherwise there is no span (the decoder's bytes are used).
   */
  private void setDataSpan(byte[] value, long start, long next, JsonToken token) {
    if (start < 0 || next <= start || next >= value.length) {
      return;
    }
    int end = (int) next;
    if (value[end] != '}') {
      // The next member's name: step back over whitespace to the comma.
      end--;
      while (end > start && StructuredWriter.isJsonWhitespace(value[end])) {
        end--;
      }
      if (value[end] != ',') {
        return;
      }
    }
    if (startsLike(token, value[(int) start])) {
      dataStart = (int) start;
      dataEnd = end;
    }
  }

  private static boolean startsLike(JsonToken token, byte first) {
    return switch (token) {
      case START_OBJECT -> first == '{';
      case START_ARRAY -> first == '[';
      case VALUE_STRING -> first == '"';
      case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> first == '-' || (first >= '0'
          && first <= '9');
      case VALUE_TRUE -> first == 't';
      case VALUE_FALSE -> first == 'f';
      default -> false;
    };
  }
}
