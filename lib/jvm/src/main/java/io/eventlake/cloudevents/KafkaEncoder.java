package io.eventlake.cloudevents;

import java.nio.charset.StandardCharsets;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

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
 *
 * <p>This class picks the conversion, runs the Key Mapper and applies the hop; the rest
 * is in {@link StructuredWriter} and {@link BinaryWriter} (each target mode), {@link
 * StructuredMembers} (what is read back from a structured record), {@link Hop} (the
 * hop's options), {@link RoutingTrail} (the trail's entry) and {@link MediaTypes} (the
 * media-type rules, shared with {@link KafkaBinding}).
 */
public final class KafkaEncoder {
  /** The target mode that copies every record as it is (a Key Mapper may still run). */
  public static final String KEEP = "keep";

  /** content-type of the structured records written here (the binding's example, 3.3.1). */
  public static final String STRUCTURED_CONTENT_TYPE =
      "application/cloudevents+json; charset=UTF-8";

  /** content-type of binary records whose JSON data had no datacontenttype (3.1.2). */
  public static final String JSON_MEDIA_TYPE = "application/json";

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
   * Encodes one decoded record for the target {@code mode}, then applies a republish
   * {@code hop} to it.
   *
   * @param event the decoder's result for the record; its attributes' {@code time} is not
   *     used (the original text is read from the record itself)
   * @param value the record value as read, null for none
   * @param headerKeys header keys in record order (a key may repeat)
   * @param headerValues header values in the same order, null for a header without value
   * @param headerCount how many of the arrays' entries are headers
   * @param mode {@link KafkaBinding#BINARY}, {@link KafkaBinding#STRUCTURED} or {@link #KEEP}
   * @param keyAttribute the attribute the Key Mapper takes the key from; null for none
   * @param hop header transforms and routing trail; {@link Hop#NONE} for none
   * @param place where the record was read and when the hop runs; needed for a trail (null
   *     without one)
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
      BinaryWriter.toBinary(out, event, time, members, value);
      otherHeaders(out, headerKeys, headerValues, headerCount);
    } else if (valid && !structured && KafkaBinding.STRUCTURED.equals(mode)) {
      out.value = StructuredWriter.toStructured(event, time);
      out.addHeader(KafkaBinding.CONTENT_TYPE, STRUCTURED_CONTENT_TYPE);
      otherHeaders(out, headerKeys, headerValues, headerCount);
    } else {
      // Already in the wanted mode, or not an event: the same bytes. In keep mode the
      // Python wrapper passes no data and only the attributes the key and the hop name
      // (eventlake.binding.encode._unread_when_kept): read no other field here.
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
          out.value = StructuredWriter.withFirstMember(out.value, extension,
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
      out.addHeader(hop.trailHeader, RoutingTrail.trailEntry(place, hop.target));
    }
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
}
