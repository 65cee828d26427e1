package io.eventlake.cloudevents;

import static io.eventlake.cloudevents.EventChecks.reject;

import io.eventlake.cloudevents.KafkaBinding.Decoded;
import io.eventlake.cloudevents.KafkaBinding.Reason;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Binary content mode (3.2) on the receiver side: the event's attributes from the {@code
 * ce_} headers, {@code content-type} as its datacontenttype, the record value as its data
 * as-is. Runs after {@link KafkaBinding#decode} has refused what makes any binary record
 * a reject (plain tombstone, header encoding, duplicate headers).
 */
final class BinaryDecoder {
  private BinaryDecoder() {}

  static Decoded decode(Decoded out, byte[] value, String contentType,
      List<String> ceNames, List<byte[]> ceValues, boolean withDataJson, boolean withData) {
    List<String> badNames = new ArrayList<>();
    for (String name : ceNames) {
      if (!EventChecks.isAttributeName(name) || name.equals(KafkaBinding.DATA)
          || name.equals(KafkaBinding.DATA_BASE64)) {
        badNames.add(KafkaBinding.CE_PREFIX + name);
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
      if (KafkaBinding.isContextAttribute(name)) {
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
    String failed = EventChecks.checkAttributes(out, extensions);
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
    if (value != null
        && MediaTypes.isJsonData(KafkaBinding.BINARY, out.attributes.get("datacontenttype"))) {
      KafkaBinding.setDataJson(out, withDataJson, () -> DataVariant.parse(value));
    }
    return out;
  }
}
