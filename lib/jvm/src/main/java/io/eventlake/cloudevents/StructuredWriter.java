package io.eventlake.cloudevents;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * The sender side's structured mode (JSON event format): the JSON-format value of a
 * binary event ({@link #toStructured}: attributes and extensions as JSON string members
 * with their header text as is, the data as {@code data} verbatim, as a JSON string or as
 * {@code data_base64}), and a structured value with a new first member ({@link
 * #withFirstMember}, a hop's header to extension).
 */
final class StructuredWriter {
  /** Member order of structured records written here. */
  static final List<String> MEMBER_ATTRIBUTES =
      List.of("specversion", "id", "source", "type", "datacontenttype", "dataschema", "subject",
          "time");

  private StructuredWriter() {}

  /** The JSON-format value of a binary event (its headers are the caller's). */
  static byte[] toStructured(KafkaBinding.Decoded event, String time) {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream(
        256 + (event.data == null ? 0 : event.data.length * 4 / 3));
    try (JsonGenerator json = JsonEvent.FACTORY.createGenerator(buffer)) {
      json.writeStartObject();
      for (String name : MEMBER_ATTRIBUTES) {
        String text = name.equals("time") ? time : event.attributes.get(name);
        if (text != null) {
          json.writeStringField(name, text);
        }
      }
      if (event.extensions != null) {
        for (Map.Entry<String, String> extension : event.extensions.entrySet()) {
          json.writeStringField(extension.getKey(), extension.getValue());
        }
      }
      writeData(json, event.data, event.attributes.get("datacontenttype"));
      json.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e); // writing to memory does not fail
    }
    return buffer.toByteArray();
  }

  private static void writeData(JsonGenerator json, byte[] data, String mediaType)
      throws IOException {
    if (data == null) {
      return;
    }
    boolean utf8 = Utf8.isValid(data);
    String text = utf8 ? new String(data, StandardCharsets.UTF_8) : null;
    if (utf8 && MediaTypes.isJsonMediaType(mediaType) && isVerbatimJson(text)) {
      json.writeFieldName(KafkaBinding.DATA);
      json.writeRawValue(text);
    } else if (utf8 && MediaTypes.isTextMediaType(mediaType)) {
      json.writeStringField(KafkaBinding.DATA, text);
    } else {
      json.writeStringField(KafkaBinding.DATA_BASE64, Base64.getEncoder().encodeToString(data));
    }
  }

  /**
   * JSON data that may stand in a JSON-format event as it is: exactly one JSON value as
   * the decoder reads one (no duplicate members, not too deep), not starting with
   * whitespace (which the way back would not keep: the member's text starts at its value).
   */
  static boolean isVerbatimJson(String text) {
    return !text.isEmpty() && !isJsonWhitespace(text.charAt(0)) && isSingleJsonValue(text);
  }

  /**
   * Exactly one JSON value, whitespace around it allowed. Parsed from characters rather
   * than bytes: Jackson guesses the encoding of bytes (UTF-16 from zero bytes), and data
   * is only ever JSON here when it is UTF-8.
   *
   * <p>Example: {@code isSingleJsonValue(" [1] ")} is true, {@code isSingleJsonValue("{}}")}
   * false (a lenient parser stops after the first value and accepts it).
   */
  static boolean isSingleJsonValue(String text) {
    try (JsonParser parser = JsonEvent.FACTORY.createParser(text)) {
      if (parser.nextToken() == null) {
        return false;
      }
      parser.skipChildren();
      return parser.nextToken() == null;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /** A JSON object's bytes with {@code "name":"text",} as its first member. */
  static byte[] withFirstMember(byte[] object, String name, String text) {
    int brace = 0;
    while (brace < object.length && object[brace] != '{') {
      brace++;
    }
    if (brace == object.length) {
      throw new IllegalStateException("a structured value without a JSON object");
    }
    byte[] member = jsonObject(json -> json.writeStringField(name, text));
    ByteArrayOutputStream buffer = new ByteArrayOutputStream(object.length + member.length);
    buffer.write(object, 0, brace + 1);
    // {"name":"text"} without its braces, then the comma before the old first member.
    buffer.write(member, 1, member.length - 2);
    buffer.write(',');
    buffer.write(object, brace + 1, object.length - brace - 1);
    return buffer.toByteArray();
  }

  /** The members of a JSON object, written by {@link #jsonObject}. */
  interface Members {
    void write(JsonGenerator json) throws IOException;
  }

  /** A JSON object's bytes: {@code members} between its braces. */
  static byte[] jsonObject(Members members) {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream(128);
    try (JsonGenerator json = JsonEvent.FACTORY.createGenerator(buffer)) {
      json.writeStartObject();
      members.write(json);
      json.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e); // writing to memory does not fail
    }
    return buffer.toByteArray();
  }

  /** JSON's whitespace (RFC 8259): space, tab, line feed and carriage return. */
  static boolean isJsonWhitespace(int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
  }
}
