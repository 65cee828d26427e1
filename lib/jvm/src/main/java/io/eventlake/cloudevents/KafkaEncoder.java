package io.eventlake.cloudevents;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The sender side of the CloudEvents Kafka protocol binding (v1.0.3), beside the receiver
 * side in {@link KafkaBinding}: a decoded event and the record it came from in, the Kafka
 * record to write out (value, headers and, with a Key Mapper, key). Exact, so that
 * converting an event between content modes never changes the event:
 *
 * <ul>
 *   <li>binary to structured (JSON format): attributes and extensions become JSON string
 *       members with their header text as is ({@code time} keeps its original text),
 *       {@code content-type} becomes datacontenttype. The data is written as {@code data}
 *       holding the bytes verbatim when the media type is JSON (or absent) and the bytes
 *       are exactly one JSON value without leading whitespace; as {@code data} holding a
 *       JSON string when the media type says text and the bytes are UTF-8 (JSON format
 *       3.1); as {@code data_base64} otherwise;
 *   <li>structured to binary: {@code ce_} headers for the attributes (extensions sorted by
 *       name), {@code content-type} for datacontenttype, the data as the value. JSON data
 *       without datacontenttype gets {@code content-type: application/json} (JSON format
 *       3.1.2). JSON data is the {@code data} member's text cut out of the record verbatim,
 *       so that binary to structured to binary gives back the same bytes;
 *   <li>headers that are neither {@code ce_*} nor {@code content-type} are carried over in
 *       their order, duplicates included; a record already in the wanted mode (or not a
 *       valid event) is copied byte for byte;
 *   <li>Key Mapper (3.1): the key is the text of a named attribute or extension, such as
 *       {@code partitionkey}; null when the event does not have it.
 * </ul>
 */
public final class KafkaEncoder {
  /** The target mode that copies every record as it is (a Key Mapper may still run). */
  public static final String KEEP = "keep";

  /** content-type of the structured records written here (the binding's example, 3.3.1). */
  public static final String STRUCTURED_CONTENT_TYPE =
      "application/cloudevents+json; charset=UTF-8";

  /** content-type of binary records whose JSON data had no datacontenttype (3.1.2). */
  public static final String JSON_MEDIA_TYPE = "application/json";

  /** Header order of binary records written here: the required attributes first. */
  static final List<String> HEADER_ATTRIBUTES =
      List.of("specversion", "id", "source", "type", "dataschema", "subject", "time");

  /** Member order of structured records written here. */
  static final List<String> MEMBER_ATTRIBUTES =
      List.of("specversion", "id", "source", "type", "datacontenttype", "dataschema", "subject",
          "time");

  private static final String TIME_HEADER = KafkaBinding.CE_PREFIX + "time";

  /** One record to write: value (null: none), headers in order, key (null: none). */
  public static final class Encoded {
    public byte[] value;
    public final List<String> headerKeys = new ArrayList<>();
    public final List<byte[]> headerValues = new ArrayList<>();

    /** The Key Mapper's key (the attribute's UTF-8 text); null without mapper or value. */
    public byte[] key;

    void addHeader(String name, byte[] value) {
      headerKeys.add(name);
      headerValues.add(value);
    }

    void addHeader(String name, String text) {
      addHeader(name, text.getBytes(StandardCharsets.UTF_8));
    }
  }

  private KafkaEncoder() {}

  /**
   * Encodes one decoded record for the target {@code mode}.
   *
   * @param event the decoder's result for the record; its attributes' {@code time} is not
   *     used (the original text is read from the record itself)
   * @param value the record value as read, null for none
   * @param headerKeys header keys in record order (a key may repeat)
   * @param headerValues header values in the same order, null for a header without value
   * @param headerCount how many of the arrays' entries are headers
   * @param mode {@link KafkaBinding#BINARY}, {@link KafkaBinding#STRUCTURED} or {@link #KEEP}
   * @param keyAttribute the attribute the Key Mapper takes the key from; null for none
   */
  public static Encoded encode(
      KafkaBinding.Decoded event,
      byte[] value,
      String[] headerKeys,
      byte[][] headerValues,
      int headerCount,
      String mode,
      String keyAttribute) {
    if (!KafkaBinding.BINARY.equals(mode) && !KafkaBinding.STRUCTURED.equals(mode)
        && !KEEP.equals(mode)) {
      throw new IllegalArgumentException(
          "content mode must be binary, structured or keep, not " + mode);
    }
    boolean valid = event.reason == null;
    boolean structured = KafkaBinding.STRUCTURED.equals(event.contentMode);
    // Read the structured value only when its time text or data member is needed.
    StructuredMembers members = null;
    boolean toBinary = valid && structured && KafkaBinding.BINARY.equals(mode);
    if (toBinary || (valid && structured && "time".equals(keyAttribute))) {
      members = StructuredMembers.read(value);
    }
    String time = !valid ? null
        : structured ? (members == null ? null : members.time)
        : firstHeaderText(TIME_HEADER, headerKeys, headerValues, headerCount);

    Encoded out = new Encoded();
    if (toBinary) {
      toBinary(out, event, time, members, value);
      otherHeaders(out, headerKeys, headerValues, headerCount);
    } else if (valid && !structured && KafkaBinding.STRUCTURED.equals(mode)) {
      out.value = toStructured(event, time);
      out.addHeader(KafkaBinding.CONTENT_TYPE, STRUCTURED_CONTENT_TYPE);
      otherHeaders(out, headerKeys, headerValues, headerCount);
    } else {
      // Already in the wanted mode, or not an event: the same bytes.
      out.value = value;
      for (int i = 0; i < headerCount; i++) {
        out.addHeader(headerKeys[i], headerValues[i]);
      }
    }
    if (keyAttribute != null && valid) {
      String text = attributeText(event, time, keyAttribute);
      out.key = text == null ? null : text.getBytes(StandardCharsets.UTF_8);
    }
    return out;
  }

  /** An attribute or extension of a valid event as text; null when the event lacks it. */
  static String attributeText(KafkaBinding.Decoded event, String time, String name) {
    if (name.equals("time")) {
      return time;
    }
    if (KafkaBinding.isContextAttribute(name)) {
      return event.attributes.get(name);
    }
    return event.extensions == null ? null : event.extensions.get(name);
  }

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
    if (utf8 && KafkaBinding.isJsonMediaType(mediaType) && isVerbatimJson(text)) {
      json.writeFieldName(KafkaBinding.DATA);
      json.writeRawValue(text);
    } else if (utf8 && isTextMediaType(mediaType)) {
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

  /** Media types whose data is text: {@code text/*} (not JSON) and XML. */
  static boolean isTextMediaType(String mediaType) {
    if (mediaType == null || KafkaBinding.isJsonMediaType(mediaType)) {
      return false;
    }
    String base = KafkaBinding.mediaType(mediaType);
    return base.startsWith("text/") || base.equals("application/xml") || base.endsWith("+xml");
  }

  /** The binary record of a structured event: value and CloudEvents headers. */
  private static void toBinary(Encoded out, KafkaBinding.Decoded event, String time,
      StructuredMembers members, byte[] value) {
    for (String name : HEADER_ATTRIBUTES) {
      String text = name.equals("time") ? time : event.attributes.get(name);
      if (text != null) {
        out.addHeader(KafkaBinding.CE_PREFIX + name, text);
      }
    }
    if (event.extensions != null) {
      // Names are lowercase ASCII letters and digits: String order is byte order.
      for (Map.Entry<String, String> extension : new TreeMap<>(event.extensions).entrySet()) {
        out.addHeader(KafkaBinding.CE_PREFIX + extension.getKey(), extension.getValue());
      }
    }
    String contentType = event.attributes.get("datacontenttype");
    if (contentType == null && event.dataIsJson) {
      // JSON format 3.1.2: JSON data without datacontenttype is application/json; a
      // binary record without content-type would leave it untyped.
      contentType = JSON_MEDIA_TYPE;
    }
    if (contentType != null) {
      out.addHeader(KafkaBinding.CONTENT_TYPE, contentType);
    }
    // JSON data is the data member's own text: the decoder's bytes are compact, with
    // members sorted, which would change a binary event's data on a round trip.
    out.value = event.dataIsJson && members.hasDataSpan()
        ? Arrays.copyOfRange(value, members.dataStart, members.dataEnd)
        : event.data;
  }

  /** Headers that do not carry the event (neither ce_* nor content-type), in order. */
  private static void otherHeaders(Encoded out, String[] headerKeys, byte[][] headerValues,
      int headerCount) {
    for (int i = 0; i < headerCount; i++) {
      String key = headerKeys[i];
      if (!key.startsWith(KafkaBinding.CE_PREFIX) && !key.equals(KafkaBinding.CONTENT_TYPE)) {
        out.addHeader(key, headerValues[i]);
      }
    }
  }

  private static String firstHeaderText(String name, String[] headerKeys, byte[][] headerValues,
      int headerCount) {
    for (int i = 0; i < headerCount; i++) {
      if (headerKeys[i].equals(name)) {
        return headerValues[i] == null
            ? null
            : new String(headerValues[i], StandardCharsets.UTF_8);
      }
    }
    return null;
  }

  static boolean isJsonWhitespace(int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
  }

  /**
   * What the sender needs from a structured record's JSON object: the {@code time}
   * member's text and where the {@code data} member's value lies in the bytes.
   */
  static final class StructuredMembers {
    String time;

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
        while (end > start && isJsonWhitespace(value[end])) {
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
}
