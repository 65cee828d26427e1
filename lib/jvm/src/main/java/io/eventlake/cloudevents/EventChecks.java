package io.eventlake.cloudevents;

import io.eventlake.cloudevents.KafkaBinding.Decoded;
import io.eventlake.cloudevents.KafkaBinding.Reason;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The core specification's type system as the receiver side checks it, the same for both
 * content modes: required attributes present and non-empty, optional ones non-empty when
 * present, no control characters, noncharacters or unpaired surrogates in strings,
 * specversion 1.0, RFC 3339 time, attribute names of lowercase letters and digits; and
 * {@link #reject}, which turns a record that fails a check into a reject with its {@link
 * Reason} code. The checks run in a fixed order: the first that fails gives the reason.
 */
final class EventChecks {
  static final String SPEC_VERSION = "1.0";

  static final List<String> REQUIRED = List.of("id", "source", "specversion", "type");
  static final List<String> OPTIONAL_STRINGS = List.of("datacontenttype", "dataschema", "subject");

  private EventChecks() {}

  /**
   * The checks both modes share, on attributes taken from the record; on failure {@code
   * out} becomes the reject and the reason is returned, otherwise null (time is set).
   */
  static String checkAttributes(Decoded out, Map<String, String> extensions) {
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

  /**
   * Makes {@code out} the reject with {@code reason} and {@code detail} (cut to {@link
   * KafkaBinding#DETAIL_MAX_CHARS}): nothing of the event is kept.
   */
  static Decoded reject(Decoded out, String reason, String detail) {
    out.reason = reason;
    out.detail = Strings.truncate(detail, KafkaBinding.DETAIL_MAX_CHARS);
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
}
