package io.eventlake.cloudevents;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.spark.types.variant.Variant;

/**
 * The receiver side of the CloudEvents Kafka protocol binding (v1.0.3), the one
 * implementation of its rules in eventlake: one Kafka record (value and headers) in, one
 * {@link Decoded} out, either a valid event or a reject with a stable reason code.
 *
 * <ul>
 *   <li>content mode (3): a {@code content-type} header starting with {@code
 *       application/cloudevents} means structured mode, anything else binary mode; ce_
 *       headers on a structured record do not make it binary (3.3.3);
 *   <li>structured mode (3.3): only the JSON event format is decoded; another format or the
 *       batch media type is a reject;
 *   <li>binary mode (3.2): attributes from {@code ce_} headers with UTF-8 keys and values,
 *       {@code content-type} is datacontenttype, the value is the data as-is; no value is an
 *       event with no data (a tombstone on a compacted topic, 3.2.2);
 *   <li>the core specification's type system: required attributes present and non-empty,
 *       optional ones non-empty when present, specversion 1.0, RFC 3339 time, attribute
 *       names of lowercase letters and digits, no control characters, noncharacters or
 *       unpaired surrogates in strings, Integer extensions whole and 32-bit. Nothing is
 *       defaulted.
 * </ul>
 *
 * <p>Checks run in a fixed order and the first that fails gives the reason, so a record
 * always gets the same one. Reason codes are the Python side's {@code RejectReason}.
 */
public final class KafkaBinding {
  public static final String CE_PREFIX = "ce_";
  public static final String CONTENT_TYPE = "content-type";
  static final String CLOUDEVENTS_MEDIA_PREFIX = "application/cloudevents";
  static final String JSON_FORMAT = "application/cloudevents+json";
  static final String BATCH_MEDIA_PREFIX = "application/cloudevents-batch";
  static final String SPEC_VERSION = "1.0";
  static final String DATA = "data";
  static final String DATA_BASE64 = "data_base64";

  public static final String BINARY = "binary";
  public static final String STRUCTURED = "structured";

  static final List<String> REQUIRED = List.of("id", "source", "specversion", "type");
  static final List<String> OPTIONAL_STRINGS = List.of("datacontenttype", "dataschema", "subject");

  /** The context attributes, in the order of the events table's columns. */
  public static final List<String> CONTEXT_ATTRIBUTES =
      List.of("id", "source", "specversion", "type", "datacontenttype", "dataschema", "subject",
          "time");

  private static final Set<String> CONTEXT = Set.copyOf(CONTEXT_ATTRIBUTES);

  /** Longest detail text kept with a reject: hostile records can have huge names. */
  public static final int DETAIL_MAX_CHARS = 500;

  /** Stable reject reason codes (the Python side's {@code RejectReason} values). */
  public static final class Reason {
    public static final String PLAIN_TOMBSTONE = "plain_tombstone";
    public static final String UNSUPPORTED_BATCH_MODE = "unsupported_batch_mode";
    public static final String UNSUPPORTED_EVENT_FORMAT = "unsupported_event_format";
    public static final String INVALID_HEADER_ENCODING = "invalid_header_encoding";
    public static final String DUPLICATE_HEADER = "duplicate_header";
    public static final String MALFORMED_JSON = "malformed_json";
    public static final String INVALID_ATTRIBUTE_NAME = "invalid_attribute_name";
    public static final String INVALID_ATTRIBUTE_TYPE = "invalid_attribute_type";
    public static final String NOT_A_CLOUDEVENT = "not_a_cloudevent";
    public static final String MISSING_REQUIRED_ATTRIBUTE = "missing_required_attribute";
    public static final String EMPTY_REQUIRED_ATTRIBUTE = "empty_required_attribute";
    public static final String EMPTY_OPTIONAL_ATTRIBUTE = "empty_optional_attribute";
    public static final String INVALID_CHARACTERS = "invalid_characters";
    public static final String UNSUPPORTED_SPECVERSION = "unsupported_specversion";
    public static final String INVALID_TIME = "invalid_time";
    public static final String DATA_AND_DATA_BASE64 = "data_and_data_base64";
    public static final String INVALID_DATA_BASE64 = "invalid_data_base64";
    public static final String CONFLICTING_DATACONTENTTYPE = "conflicting_datacontenttype";

    /** Every code, in the order the checks run. */
    public static final List<String> ALL =
        List.of(PLAIN_TOMBSTONE, UNSUPPORTED_BATCH_MODE, UNSUPPORTED_EVENT_FORMAT,
            INVALID_HEADER_ENCODING, DUPLICATE_HEADER, MALFORMED_JSON, INVALID_ATTRIBUTE_NAME,
            INVALID_ATTRIBUTE_TYPE, NOT_A_CLOUDEVENT, MISSING_REQUIRED_ATTRIBUTE,
            EMPTY_REQUIRED_ATTRIBUTE, EMPTY_OPTIONAL_ATTRIBUTE, INVALID_CHARACTERS,
            UNSUPPORTED_SPECVERSION, INVALID_TIME, DATA_AND_DATA_BASE64, INVALID_DATA_BASE64,
            CONFLICTING_DATACONTENTTYPE);

    private Reason() {}
  }

  /** One decoded record: a valid event (reason null) or a reject (reason and detail). */
  public static final class Decoded {
    /** Context attributes by name (time as its text), valid events only. */
    public final Map<String, String> attributes = new LinkedHashMap<>();

    /** The event's time in microseconds since the epoch; meaningful when hasTime. */
    public long timeMicros;

    public boolean hasTime;
    public byte[] data;

    /**
     * True when data is the JSON text of a JSON-format event's {@code data} member (not
     * {@code data_base64}, not a string taken as text): such data is application/json
     * when the event has no datacontenttype (JSON format 3.1.2).
     */
    public boolean dataIsJson;

    /**
     * The data as a VARIANT when it is JSON (see {@link #isJsonData}); null otherwise,
     * and null when JSON data does not parse ({@link #dataJsonInvalid}).
     */
    public Variant dataJson;

    /** True when the data is JSON by its media type but is not one JSON value. */
    public boolean dataJsonInvalid;

    /** Extension attributes in record order, as strings; null for rejects. */
    public Map<String, String> extensions;

    public String contentMode;
    public String reason;
    public String detail;
  }

  private KafkaBinding() {}

  /**
   * Decodes one Kafka record.
   *
   * @param value the record value, null for none
   * @param headerKeys header keys in record order (a key may repeat)
   * @param headerValues header values in the same order, null for a header without value
   * @param headerCount how many of the arrays' entries are headers
   */
  public static Decoded decode(
      byte[] value, String[] headerKeys, byte[][] headerValues, int headerCount) {
    return decode(value, headerKeys, headerValues, headerCount, true, true);
  }

  /**
   * As {@link #decode(byte[], String[], byte[][], int)}. Without {@code withDataJson} the
   * data is not built into a VARIANT ({@code dataJson} stays null, nothing is flagged),
   * for a caller that only forwards the event (republish). Without {@code withData}
   * the data is checked as ever but not kept ({@code data} and {@code dataJson} stay
   * null): for a caller that needs each record's fate and attributes, not its data
   * (republish keeping the content mode, the rejects' pass). A structured event's JSON
   * data is then parsed without building its tree and its sorted text.
   */
  public static Decoded decode(byte[] value, String[] headerKeys, byte[][] headerValues,
      int headerCount, boolean withDataJson, boolean withData) {
    // One pass over the headers: content-type, ce_ names and values, and what is wrong.
    int contentTypeCount = 0;
    byte[] contentTypeBytes = null;
    boolean badEncoding = false;
    List<String> ceNames = new ArrayList<>();
    List<byte[]> ceValues = new ArrayList<>();
    for (int i = 0; i < headerCount; i++) {
      String key = headerKeys[i];
      byte[] headerValue = headerValues[i];
      if (key.equals(CONTENT_TYPE)) {
        contentTypeCount++;
        if (contentTypeCount == 1) {
          contentTypeBytes = headerValue;
        }
        badEncoding |= headerValue == null || !Utf8.isValid(headerValue);
      } else if (key.startsWith(CE_PREFIX)) {
        String name = key.substring(CE_PREFIX.length());
        ceNames.add(name);
        ceValues.add(headerValue);
        // A key that was not UTF-8 arrives with U+FFFD for its bad bytes.
        badEncoding |=
            headerValue == null || !Utf8.isValid(headerValue) || name.indexOf('\uFFFD') >= 0;
      }
    }
    String contentType =
        contentTypeBytes == null ? null : new String(contentTypeBytes, StandardCharsets.UTF_8);
    boolean structured =
        contentType != null
            && ltrimSpaces(contentType).toLowerCase(Locale.ROOT)
                .startsWith(CLOUDEVENTS_MEDIA_PREFIX);
    String mediaType = contentType == null ? null : mediaType(contentType);
    boolean jsonFormat = structured && JSON_FORMAT.equals(mediaType);

    Decoded out = new Decoded();
    out.contentMode = structured ? STRUCTURED : BINARY;
    boolean binary = !structured;

    if (binary && value == null && ceNames.isEmpty()) {
      return reject(out, Reason.PLAIN_TOMBSTONE,
          "record has no value and no ce_ headers: a plain Kafka tombstone, not a CloudEvent");
    }
    if (structured && mediaType.startsWith(BATCH_MEDIA_PREFIX)) {
      return reject(out, Reason.UNSUPPORTED_BATCH_MODE,
          "the Kafka binding has no batch mode; content-type: " + contentType);
    }
    if (structured && !jsonFormat) {
      return reject(out, Reason.UNSUPPORTED_EVENT_FORMAT,
          "structured event format not decodable here (only JSON); content-type: " + contentType);
    }
    if (binary && badEncoding) {
      return reject(out, Reason.INVALID_HEADER_ENCODING,
          "a ce_ or content-type header has no value or is not valid UTF-8");
    }
    List<String> duplicates = binary ? duplicates(ceNames) : new ArrayList<>();
    if (!duplicates.isEmpty() || contentTypeCount > 1) {
      // Two content-type headers leave the content mode itself undecided: any mode.
      List<String> repeated = new ArrayList<>();
      for (String name : duplicates) {
        repeated.add(CE_PREFIX + name);
      }
      if (contentTypeCount > 1) {
        repeated.add(CONTENT_TYPE);
      }
      return reject(out, Reason.DUPLICATE_HEADER, "header repeated: " + String.join(", ", repeated));
    }
    if (structured) {
      return decodeStructured(out, value, withData && withDataJson, withData);
    }
    return decodeBinary(out, value, contentType, ceNames, ceValues, withData && withDataJson,
        withData);
  }

  private static Decoded decodeBinary(Decoded out, byte[] value, String contentType,
      List<String> ceNames, List<byte[]> ceValues, boolean withDataJson, boolean withData) {
    List<String> badNames = new ArrayList<>();
    for (String name : ceNames) {
      if (!isAttributeName(name) || name.equals(DATA) || name.equals(DATA_BASE64)) {
        badNames.add(CE_PREFIX + name);
      }
    }
    if (!badNames.isEmpty()) {
      return reject(out, Reason.INVALID_ATTRIBUTE_NAME,
          "attribute names must be lowercase letters and digits (data is not a header): "
              + String.join(", ", badNames));
    }
    if (ceNames.isEmpty()) {
      return reject(out, Reason.NOT_A_CLOUDEVENT, "no ce_ headers and no CloudEvents content-type");
    }
    Map<String, String> extensions = new LinkedHashMap<>();
    String ceDatacontenttype = null;
    for (int i = 0; i < ceNames.size(); i++) {
      String name = ceNames.get(i);
      String text = new String(ceValues.get(i), StandardCharsets.UTF_8);
      if (CONTEXT.contains(name)) {
        out.attributes.put(name, text);
      } else {
        extensions.put(name, text);
      }
      if (name.equals("datacontenttype")) {
        ceDatacontenttype = text;
      }
    }
    if (contentType != null) {
      out.attributes.put("datacontenttype", contentType);
    }
    String failed = checkAttributes(out, extensions);
    if (failed != null) {
      return out;
    }
    if (contentType != null && ceDatacontenttype != null
        && !contentType.equals(ceDatacontenttype)) {
      return reject(out, Reason.CONFLICTING_DATACONTENTTYPE,
          "content-type and ce_datacontenttype headers disagree");
    }
    out.data = withData ? value : null;
    out.extensions = extensions;
    if (value != null && isJsonData(BINARY, out.attributes.get("datacontenttype"))) {
      setDataJson(out, withDataJson, () -> DataVariant.parse(value));
    }
    return out;
  }

  private static Decoded decodeStructured(Decoded out, byte[] value, boolean withDataJson,
      boolean withData) {
    if (value == null) {
      return reject(out, Reason.MALFORMED_JSON, "structured record with no value");
    }
    if (!Utf8.isValid(value)) {
      return reject(out, Reason.MALFORMED_JSON, "structured JSON value is not valid UTF-8");
    }
    JsonEvent json;
    try {
      json = JsonEvent.read(value, withData);
    } catch (IOException e) {
      return reject(out, Reason.MALFORMED_JSON,
          "value is not parseable JSON (syntax, duplicate member, or nesting too deep)");
    }
    if (!json.isObject) {
      return reject(out, Reason.MALFORMED_JSON, "JSON value is not an object");
    }
    if (!json.badNames.isEmpty()) {
      return reject(out, Reason.INVALID_ATTRIBUTE_NAME,
          "attribute names must be lowercase letters and digits: "
              + String.join(", ", json.badNames));
    }
    if (!json.badTypes.isEmpty()) {
      return reject(out, Reason.INVALID_ATTRIBUTE_TYPE,
          "attribute values must be strings (extensions: string, integer or boolean): "
              + String.join(", ", json.badTypes));
    }
    if (!json.badIntegers.isEmpty()) {
      return reject(out, Reason.INVALID_ATTRIBUTE_TYPE,
          "extension numbers must be integers from -2147483648 to 2147483647: "
              + String.join(", ", json.badIntegers));
    }
    String dataBase64 = json.strings.remove(DATA_BASE64);
    out.attributes.putAll(json.strings);
    if (checkAttributes(out, json.extensions) != null) {
      return out;
    }
    if (json.dataKind != JsonEvent.DataKind.NONE && dataBase64 != null) {
      return reject(out, Reason.DATA_AND_DATA_BASE64,
          "the JSON event has both data and data_base64");
    }
    String datacontenttype = out.attributes.get("datacontenttype");
    if (dataBase64 != null) {
      try {
        out.data = Base64.getDecoder().decode(dataBase64);
      } catch (IllegalArgumentException e) {
        return reject(out, Reason.INVALID_DATA_BASE64, "data_base64 is not valid base64");
      }
      // Bytes, JSON only when a JSON media type says so.
      if (datacontenttype != null && isJsonMediaType(datacontenttype)) {
        byte[] decoded = out.data;
        setDataJson(out, withDataJson, () -> DataVariant.parse(decoded));
      }
    } else if (json.dataKind == JsonEvent.DataKind.OTHER) {
      // JSON data (an object, array, number, true, false) is stored as JSON whatever
      // the datacontenttype, and is a VARIANT from the tree already read.
      out.data = json.dataJson;
      out.dataIsJson = true;
      setDataJson(out, withDataJson, () -> DataVariant.ofTree(json.dataTree));
    } else if (json.dataKind == JsonEvent.DataKind.STRING) {
      // A string under a JSON media type (or none: JSON format 3.1.2) is a JSON value.
      out.dataIsJson = isJsonData(STRUCTURED, datacontenttype);
      if (withData) {
        stringData(out, json.dataString, withDataJson);
      }
    }
    out.extensions = json.extensions;
    if (!withData) {
      // Checked above (data_base64 decoded, JSON data parsed), not kept.
      out.data = null;
    }
    return out;
  }

  /** A JSON-format event's string data as its bytes (and VARIANT, when it is JSON). */
  private static void stringData(Decoded out, String text, boolean withDataJson) {
    try {
      out.data = out.dataIsJson
          ? JsonEvent.stringAsJson(text)
          : text.getBytes(StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException("writing a JSON string cannot fail", e);
    }
    if (out.dataIsJson) {
      setDataJson(out, withDataJson, () -> DataVariant.ofString(text));
    }
  }

  /**
   * The checks both modes share, on attributes taken from the record; on failure {@code
   * out} becomes the reject and the reason is returned, otherwise null (time is set).
   */
  private static String checkAttributes(Decoded out, Map<String, String> extensions) {
    Map<String, String> attributes = out.attributes;
    List<String> missing = new ArrayList<>();
    List<String> empty = new ArrayList<>();
    for (String name : REQUIRED) {
      String text = attributes.get(name);
      if (text == null) {
        missing.add(name);
      } else if (text.isEmpty()) {
        empty.add(name);
      }
    }
    if (!missing.isEmpty()) {
      reject(out, Reason.MISSING_REQUIRED_ATTRIBUTE,
          "missing required attribute(s): " + String.join(", ", missing));
      return out.reason;
    }
    if (!empty.isEmpty()) {
      reject(out, Reason.EMPTY_REQUIRED_ATTRIBUTE,
          "empty required attribute(s): " + String.join(", ", empty));
      return out.reason;
    }
    List<String> emptyOptional = new ArrayList<>();
    for (String name : OPTIONAL_STRINGS) {
      if ("".equals(attributes.get(name))) {
        emptyOptional.add(name);
      }
    }
    if (!emptyOptional.isEmpty()) {
      reject(out, Reason.EMPTY_OPTIONAL_ATTRIBUTE,
          "optional attribute(s) present but empty: " + String.join(", ", emptyOptional));
      return out.reason;
    }
    List<String> badCharacters = new ArrayList<>();
    for (Map.Entry<String, String> attribute : attributes.entrySet()) {
      // time is a Timestamp, held to RFC 3339 below.
      if (!attribute.getKey().equals("time") && !Strings.allowed(attribute.getValue())) {
        badCharacters.add(attribute.getKey());
      }
    }
    for (Map.Entry<String, String> extension : extensions.entrySet()) {
      if (!Strings.allowed(extension.getValue())) {
        badCharacters.add(extension.getKey());
      }
    }
    if (!badCharacters.isEmpty()) {
      reject(out, Reason.INVALID_CHARACTERS,
          "control characters, noncharacters or unpaired surrogates in: "
              + String.join(", ", badCharacters));
      return out.reason;
    }
    String specversion = attributes.get("specversion");
    if (!SPEC_VERSION.equals(specversion)) {
      reject(out, Reason.UNSUPPORTED_SPECVERSION,
          "specversion must be " + SPEC_VERSION + ", got " + specversion);
      return out.reason;
    }
    String time = attributes.get("time");
    if (time != null) {
      long micros = Rfc3339.parse(time);
      if (micros == Rfc3339.NOT_RFC3339) {
        reject(out, Reason.INVALID_TIME, "time is not an RFC 3339 timestamp: " + time);
        return out.reason;
      }
      if (micros == Rfc3339.OUT_OF_RANGE) {
        reject(out, Reason.INVALID_TIME,
            "time is outside years 0001-9999 in UTC: " + time.substring(0, Math.min(100,
                time.length())));
        return out.reason;
      }
      out.timeMicros = micros;
      out.hasTime = true;
    }
    return null;
  }

  private static Decoded reject(Decoded out, String reason, String detail) {
    out.reason = reason;
    out.detail = Strings.truncate(detail, DETAIL_MAX_CHARS);
    out.attributes.clear();
    out.hasTime = false;
    out.data = null;
    out.dataIsJson = false;
    out.dataJson = null;
    out.dataJsonInvalid = false;
    out.extensions = null;
    return out;
  }

  /** Lowercase ASCII letters and digits, at least one (the core spec's naming rule). */
  static boolean isAttributeName(String name) {
    if (name.isEmpty()) {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
        return false;
      }
    }
    return true;
  }

  static boolean isContextAttribute(String name) {
    return CONTEXT.contains(name);
  }

  /**
   * Whether an event's data is JSON, for {@code data_json}: its datacontenttype is a JSON
   * media type ({@code application/json}, {@code text/json}, any {@code +json} suffix),
   * or, in structured mode only, absent (JSON format 3.1). Binary mode has no default.
   */
  static boolean isJsonData(String contentMode, String datacontenttype) {
    if (datacontenttype == null) {
      return STRUCTURED.equals(contentMode);
    }
    return isJsonMediaType(datacontenttype);
  }

  /**
   * The event's JSON data as its VARIANT, null and flagged when it does not parse; without
   * {@code withDataJson} nothing is built and nothing flagged.
   */
  private static void setDataJson(Decoded out, boolean withDataJson,
      java.util.function.Supplier<Variant> variant) {
    if (!withDataJson) {
      return;
    }
    out.dataJson = variant.get();
    out.dataJsonInvalid = out.dataJson == null;
  }

  /** JSON format 3.1: data is a JSON value when datacontenttype is JSON or absent. */
  static boolean isJsonMediaType(String datacontenttype) {
    if (datacontenttype == null) {
      return true;
    }
    String base = mediaType(datacontenttype);
    return base.equals("application/json") || base.equals("text/json") || base.endsWith("+json");
  }

  /** The media type without parameters, trimmed and lowercase. */
  static String mediaType(String contentType) {
    int semicolon = contentType.indexOf(';');
    String base = semicolon < 0 ? contentType : contentType.substring(0, semicolon);
    return trimSpaces(base).toLowerCase(Locale.ROOT);
  }

  private static String ltrimSpaces(String text) {
    int start = 0;
    while (start < text.length() && text.charAt(start) == ' ') {
      start++;
    }
    return text.substring(start);
  }

  private static String trimSpaces(String text) {
    int end = text.length();
    while (end > 0 && text.charAt(end - 1) == ' ') {
      end--;
    }
    return ltrimSpaces(text.substring(0, end));
  }

  /** Names that occur more than once, each once, in order of first occurrence. */
  private static List<String> duplicates(List<String> names) {
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
