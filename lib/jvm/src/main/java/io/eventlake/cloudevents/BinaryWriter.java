package io.eventlake.cloudevents;

import io.eventlake.cloudevents.KafkaEncoder.Encoded;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The sender side's binary mode: the binary record of a structured event, {@code ce_}
 * headers for its attributes and extensions (these sorted by name), {@code content-type}
 * for its datacontenttype and its data as the value (JSON data cut out of the structured
 * record verbatim, where {@link StructuredMembers} located it).
 */
final class BinaryWriter {
  /** Header order of binary records written here: the required attributes first. */
  static final List<String> HEADER_ATTRIBUTES =
      List.of("specversion", "id", "source", "type", "dataschema", "subject", "time");

  private BinaryWriter() {}

  /** The binary record of a structured event: value and CloudEvents headers. */
  static void toBinary(Encoded out, KafkaBinding.Decoded event, String time,
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
      contentType = KafkaEncoder.JSON_MEDIA_TYPE;
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
}
