package io.eventlake.cloudevents;

import static io.eventlake.cloudevents.EventChecks.reject;

import io.eventlake.cloudevents.KafkaBinding.Decoded;
import io.eventlake.cloudevents.KafkaBinding.Reason;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * Structured content mode (3.3) on the receiver side, JSON event format only: the record
 * value read as one JSON-format event ({@link JsonEvent}), its typing rules held, and its
 * data taken from {@code data} or {@code data_base64}. Runs after {@link
 * KafkaBinding#decode} has refused other formats, the batch media type and duplicate
 * content-type headers.
 */
final class StructuredDecoder {
  private StructuredDecoder() {}

  static Decoded decode(Decoded out, byte[] value, boolean withDataJson, boolean withData) {
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
    String dataBase64 = json.strings.remove(KafkaBinding.DATA_BASE64);
    out.attributes.putAll(json.strings);
    if (EventChecks.checkAttributes(out, json.extensions) != null) {
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
      if (datacontenttype != null && MediaTypes.isJsonMediaType(datacontenttype)) {
        byte[] decoded = out.data;
        KafkaBinding.setDataJson(out, withDataJson, () -> DataVariant.parse(decoded));
      }
    } else if (json.dataKind == JsonEvent.DataKind.OTHER) {
      // JSON data (an object, array, number, true, false) is stored as JSON whatever
      // the datacontenttype, and is a VARIANT from the tree already read.
      out.data = json.dataJson;
      out.dataIsJson = true;
      KafkaBinding.setDataJson(out, withDataJson, () -> DataVariant.ofTree(json.dataTree));
    } else if (json.dataKind == JsonEvent.DataKind.STRING) {
      // A string under a JSON media type (or none: JSON format 3.1.2) is a JSON value.
      out.dataIsJson = MediaTypes.isJsonData(KafkaBinding.STRUCTURED, datacontenttype);
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
      KafkaBinding.setDataJson(out, withDataJson, () -> DataVariant.ofString(text));
    }
  }
}
