package io.eventlake.cloudevents;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
 *       {@code partitionkey}; null when the event does not have it;
 *   <li>a republish hop ({@link Hop}), after the conversion: a header copied into an
 *       extension the event lacks (structured target), headers dropped by name, attributes
 *       copied into headers, literal headers, and the routing trail's entry appended.
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
    return encode(event, value, headerKeys, headerValues, headerCount, mode, keyAttribute,
        Hop.NONE, null);
  }

  /**
   * Encodes one decoded record for the target {@code mode}, then applies a republish
   * {@code hop} to it.
   *
   * @param hop header transforms and routing trail; {@link Hop#NONE} for none
   * @param place where the record was read and when the hop runs; needed for a trail
   */
  public static Encoded encode(
      KafkaBinding.Decoded event,
      byte[] value,
      String[] headerKeys,
      byte[][] headerValues,
      int headerCount,
      String mode,
      String keyAttribute,
      Hop hop,
      Place place) {
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
    if (valid && structured && (toBinary || "time".equals(keyAttribute)
        || hop.needsStructuredMembers())) {
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
      // Already in the wanted mode, or not an event: the same bytes. In keep mode the
      // Python wrapper passes no data and only the attributes the key and the hop name
      // (eventlake.republish.encode._unread_when_kept): read no other field here.
      out.value = value;
      for (int i = 0; i < headerCount; i++) {
        out.addHeader(headerKeys[i], headerValues[i]);
      }
    }
    if (keyAttribute != null && valid) {
      String text = attributeText(event, time, keyAttribute);
      out.key = text == null ? null : text.getBytes(StandardCharsets.UTF_8);
    }
    applyHop(out, hop, place, valid ? event : null, time, members, headerKeys, headerValues,
        headerCount);
    return out;
  }

  /**
   * What a republish hop does to every record besides encoding it, in this order: header
   * to extension (on the value), drop headers, attribute to header, literal headers, the
   * trail's entry. Transforms never touch {@code ce_*} or {@code content-type}: the
   * Python side refuses such requests before anything runs.
   */
  public static final class Hop implements Serializable {
    private static final long serialVersionUID = 1L;

    /** No transforms and no trail. */
    public static final Hop NONE = new Hop(List.of(), List.of(), List.of(), List.of(), null, null);

    /** (header, extension): the first such header becomes the extension if it is new. */
    final List<Pair> headerAttributes;

    /** Header names removed (every occurrence). */
    final Set<String> dropHeaders;

    /** (attribute, header): the attribute's text appended as a header when present. */
    final List<Pair> attributeHeaders;

    /** (name, text): headers appended to every record. */
    final List<Pair> insertHeaders;

    /** The routing trail's header; null for no trail. */
    final String trailHeader;

    /** The target topic, as the trail's entries name it. */
    final String target;

    /** Two strings. */
    public record Pair(String first, String second) implements Serializable {}

    public Hop(List<Pair> headerAttributes, List<String> dropHeaders,
        List<Pair> attributeHeaders, List<Pair> insertHeaders, String trailHeader,
        String target) {
      this.headerAttributes = List.copyOf(headerAttributes);
      this.dropHeaders = Set.copyOf(dropHeaders);
      this.attributeHeaders = List.copyOf(attributeHeaders);
      this.insertHeaders = List.copyOf(insertHeaders);
      this.trailHeader = trailHeader;
      this.target = target;
    }

    /**
     * A hop from its JSON text (what the Python side passes as a constant), e.g. {@code
     * {"header_attributes":[["origin","origin"]],"drop_headers":["debug"],
     * "attribute_headers":[["subject","x-subject"]],"insert_headers":[["team","x"]],
     * "trail_header":"eventlake-trail","target":"orders"}}; members may be left out.
     *
     * @throws IllegalArgumentException when the text is not such an object
     */
    public static Hop fromJson(String text) {
      List<Pair> headerAttributes = new ArrayList<>();
      List<String> dropHeaders = new ArrayList<>();
      List<Pair> attributeHeaders = new ArrayList<>();
      List<Pair> insertHeaders = new ArrayList<>();
      String trailHeader = null;
      String target = null;
      try (JsonParser json = JsonEvent.FACTORY.createParser(text)) {
        expect(json.nextToken(), JsonToken.START_OBJECT);
        while (json.nextToken() == JsonToken.FIELD_NAME) {
          String name = json.currentName();
          JsonToken token = json.nextToken();
          switch (name) {
            case "header_attributes" -> readPairs(json, token, headerAttributes);
            case "attribute_headers" -> readPairs(json, token, attributeHeaders);
            case "insert_headers" -> readPairs(json, token, insertHeaders);
            case "drop_headers" -> {
              expect(token, JsonToken.START_ARRAY);
              while (json.nextToken() == JsonToken.VALUE_STRING) {
                dropHeaders.add(json.getText());
              }
              expect(json.currentToken(), JsonToken.END_ARRAY);
            }
            case "trail_header" -> trailHeader = token == JsonToken.VALUE_NULL ? null
                : stringOf(json, token);
            case "target" -> target = token == JsonToken.VALUE_NULL ? null
                : stringOf(json, token);
            default -> throw new IOException("unknown member " + name);
          }
        }
        if (json.nextToken() != null) {
          throw new IOException("more than one JSON value");
        }
      } catch (IOException e) {
        throw new IllegalArgumentException("not a republish hop: " + e.getMessage(), e);
      }
      if (trailHeader != null && target == null) {
        throw new IllegalArgumentException("a republish hop with a trail needs its target");
      }
      return new Hop(headerAttributes, dropHeaders, attributeHeaders, insertHeaders,
          trailHeader, target);
    }

    private static void readPairs(JsonParser json, JsonToken token, List<Pair> pairs)
        throws IOException {
      expect(token, JsonToken.START_ARRAY);
      while (json.nextToken() == JsonToken.START_ARRAY) {
        String first = stringOf(json, json.nextToken());
        String second = stringOf(json, json.nextToken());
        expect(json.nextToken(), JsonToken.END_ARRAY);
        pairs.add(new Pair(first, second));
      }
      expect(json.currentToken(), JsonToken.END_ARRAY);
    }

    private static String stringOf(JsonParser json, JsonToken token) throws IOException {
      expect(token, JsonToken.VALUE_STRING);
      return json.getText();
    }

    private static void expect(JsonToken token, JsonToken wanted) throws IOException {
      if (token != wanted) {
        throw new IOException("expected " + wanted + ", got " + token);
      }
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof Hop that
          && headerAttributes.equals(that.headerAttributes)
          && dropHeaders.equals(that.dropHeaders)
          && attributeHeaders.equals(that.attributeHeaders)
          && insertHeaders.equals(that.insertHeaders)
          && java.util.Objects.equals(trailHeader, that.trailHeader)
          && java.util.Objects.equals(target, that.target);
    }

    @Override
    public int hashCode() {
      return java.util.Objects.hash(headerAttributes, dropHeaders, attributeHeaders,
          insertHeaders, trailHeader, target);
    }

    @Override
    public String toString() {
      return "Hop(headerAttributes=" + headerAttributes + ", dropHeaders=" + dropHeaders
          + ", attributeHeaders=" + attributeHeaders + ", insertHeaders=" + insertHeaders
          + ", trailHeader=" + trailHeader + ", target=" + target + ")";
    }

    boolean needsStructuredMembers() {
      return !headerAttributes.isEmpty();
    }

    boolean hasTrail() {
      return trailHeader != null;
    }
  }

  /**
   * Where a record was read and when the hop runs, for its trail entry: timestamps in
   * microseconds since the epoch, written in {@code zone} as Spark's {@code to_json}
   * writes them. A null field is left out of the entry, as {@code to_json} leaves it.
   */
  public record Place(String topic, Integer partition, Long offset, Long timestampMicros,
      Long atMicros, ZoneId zone) {}

  private static void applyHop(Encoded out, Hop hop, Place place, KafkaBinding.Decoded event,
      String time, StructuredMembers members, String[] headerKeys, byte[][] headerValues,
      int headerCount) {
    if (event != null && out.value != null) {
      Set<String> added = new HashSet<>();
      for (Hop.Pair pair : hop.headerAttributes) {
        byte[] headerValue = firstHeader(pair.first(), headerKeys, headerValues, headerCount);
        String extension = pair.second();
        // A JSON null member is no attribute, but a second member would be a duplicate.
        boolean present = attributeText(event, time, extension) != null
            || (members != null && members.names.contains(extension))
            || added.contains(extension);
        if (headerValue != null && Utf8.isValid(headerValue) && !present) {
          out.value = withFirstMember(out.value, extension,
              new String(headerValue, StandardCharsets.UTF_8));
          added.add(extension);
        }
      }
    }
    if (!hop.dropHeaders.isEmpty()) {
      for (int i = out.headerKeys.size() - 1; i >= 0; i--) {
        if (hop.dropHeaders.contains(out.headerKeys.get(i))) {
          out.headerKeys.remove(i);
          out.headerValues.remove(i);
        }
      }
    }
    for (Hop.Pair pair : hop.attributeHeaders) {
      String text = event == null ? null : attributeText(event, time, pair.first());
      if (text != null) {
        out.addHeader(pair.second(), text);
      }
    }
    for (Hop.Pair pair : hop.insertHeaders) {
      out.addHeader(pair.first(), pair.second());
    }
    if (hop.hasTrail()) {
      out.addHeader(hop.trailHeader, trailEntry(place, hop.target));
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

  /**
   * One routing-trail entry: the record's topic, partition, offset and timestamp, the
   * target and the time of the hop, as Spark's {@code to_json} of that struct writes it
   * (what {@code trail_entries} reads back).
   */
  static byte[] trailEntry(Place place, String target) {
    if (!isPlainText(place.topic()) || !isPlainText(target)) {
      return jsonTrailEntry(place, target);
    }
    // Written by hand: Jackson's generator per record cost a republish ~7% of its task
    // time. Plain text is what the generator writes unchanged; KafkaEncoderTest holds the
    // two equal.
    StringBuilder json = new StringBuilder(192).append('{');
    if (place.topic() != null) {
      json.append("\"topic\":\"").append(place.topic()).append("\",");
    }
    if (place.partition() != null) {
      json.append("\"partition\":").append(place.partition().intValue()).append(',');
    }
    if (place.offset() != null) {
      json.append("\"offset\":").append(place.offset().longValue()).append(',');
    }
    if (place.timestampMicros() != null) {
      json.append("\"timestamp\":\"")
          .append(TrailTime.format(place.timestampMicros(), place.zone())).append("\",");
    }
    json.append("\"target\":\"").append(target).append('"');
    if (place.atMicros() != null) {
      json.append(",\"at\":\"").append(TrailTime.formatHopTime(place.atMicros(), place.zone()))
          .append('"');
    }
    return json.append('}').toString().getBytes(StandardCharsets.UTF_8);
  }

  /** True for null and for text that JSON writes as it is: printable ASCII, no quote or
   * backslash. */
  static boolean isPlainText(String text) {
    if (text == null) {
      return true;
    }
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
        return false;
      }
    }
    return true;
  }

  /** {@link #trailEntry} through Jackson's generator, which escapes what it must. */
  static byte[] jsonTrailEntry(Place place, String target) {
    return jsonObject(json -> {
      if (place.topic() != null) {
        json.writeStringField("topic", place.topic());
      }
      if (place.partition() != null) {
        json.writeNumberField("partition", place.partition());
      }
      if (place.offset() != null) {
        json.writeNumberField("offset", place.offset());
      }
      if (place.timestampMicros() != null) {
        json.writeStringField("timestamp", TrailTime.format(place.timestampMicros(), place.zone()));
      }
      json.writeStringField("target", target);
      if (place.atMicros() != null) {
        json.writeStringField("at", TrailTime.format(place.atMicros(), place.zone()));
      }
    });
  }

  private interface Members {
    void write(JsonGenerator json) throws IOException;
  }

  private static byte[] jsonObject(Members members) {
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
    byte[] value = firstHeader(name, headerKeys, headerValues, headerCount);
    return value == null ? null : new String(value, StandardCharsets.UTF_8);
  }

  /** The value of the first header called {@code name}; null when absent or valueless. */
  private static byte[] firstHeader(String name, String[] headerKeys, byte[][] headerValues,
      int headerCount) {
    for (int i = 0; i < headerCount; i++) {
      if (headerKeys[i].equals(name)) {
        return headerValues[i];
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
