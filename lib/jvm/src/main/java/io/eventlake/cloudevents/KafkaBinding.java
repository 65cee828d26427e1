package io.eventlake.cloudevents;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
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
 *
 * <p>This class decides the content mode and refuses what the headers alone make a
 * reject; the rest is in {@link BindingHeaders} (reading the headers), {@link MediaTypes}
 * (the media-type rules, shared with {@link KafkaEncoder}), {@link BinaryDecoder} and
 * {@link StructuredDecoder} (each mode) and {@link EventChecks} (the checks both modes
 * share, and making a reject).
 */
public final class KafkaBinding {
  public static final String CE_PREFIX = "ce_";
  public static final String CONTENT_TYPE = "content-type";
  static final String DATA = "data";
  static final String DATA_BASE64 = "data_base64";

  public static final String BINARY = "binary";
  public static final String STRUCTURED = "structured";

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
     * The data as a VARIANT when it is JSON (see {@link MediaTypes#isJsonData}); null otherwise,
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
    BindingHeaders headers = BindingHeaders.read(headerKeys, headerValues, headerCount);
    List<String> ceNames = headers.ceNames;
    String contentType = headers.contentType();
    boolean structured = MediaTypes.isStructuredMode(contentType);
    String mediaType = contentType == null ? null : MediaTypes.mediaType(contentType);
    boolean jsonFormat = structured && MediaTypes.isJsonFormat(mediaType);

    Decoded out = new Decoded();
    out.contentMode = structured ? STRUCTURED : BINARY;
    boolean binary = !structured;

    if (binary && value == null && ceNames.isEmpty()) {
      return EventChecks.reject(out, Reason.PLAIN_TOMBSTONE,
          "record has no value and no ce_ headers: a plain Kafka tombstone, not a CloudEvent");
    }
    if (structured && MediaTypes.isBatch(mediaType)) {
      return EventChecks.reject(out, Reason.UNSUPPORTED_BATCH_MODE,
          "the Kafka binding has no batch mode; content-type: " + contentType);
    }
    if (structured && !jsonFormat) {
      return EventChecks.reject(out, Reason.UNSUPPORTED_EVENT_FORMAT,
          "structured event format not decodable here (only JSON); content-type: " + contentType);
    }
    if (binary && headers.badEncoding) {
      return EventChecks.reject(out, Reason.INVALID_HEADER_ENCODING,
          "a ce_ or content-type header has no value or is not valid UTF-8");
    }
    List<String> duplicates = binary ? BindingHeaders.duplicates(ceNames) : new ArrayList<>();
    if (!duplicates.isEmpty() || headers.contentTypeCount > 1) {
      // Two content-type headers leave the content mode itself undecided: any mode.
      List<String> repeated = new ArrayList<>();
      for (String name : duplicates) {
        repeated.add(CE_PREFIX + name);
      }
      if (headers.contentTypeCount > 1) {
        repeated.add(CONTENT_TYPE);
      }
      return EventChecks.reject(out, Reason.DUPLICATE_HEADER,
          "header repeated: " + String.join(", ", repeated));
    }
    if (structured) {
      return StructuredDecoder.decode(out, value, withData && withDataJson, withData);
    }
    return BinaryDecoder.decode(out, value, contentType, ceNames, headers.ceValues,
        withData && withDataJson, withData);
  }

  static boolean isContextAttribute(String name) {
    return CONTEXT.contains(name);
  }

  /**
   * The event's JSON data as its VARIANT, null and flagged when it does not parse; without
   * {@code withDataJson} nothing is built and nothing flagged.
   */
  static void setDataJson(Decoded out, boolean withDataJson, Supplier<Variant> variant) {
    if (!withDataJson) {
      return;
    }
    out.dataJson = variant.get();
    out.dataJsonInvalid = out.dataJson == null;
  }
}
