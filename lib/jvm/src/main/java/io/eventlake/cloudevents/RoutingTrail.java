package io.eventlake.cloudevents;

import io.eventlake.cloudevents.KafkaEncoder.Place;
import java.nio.charset.StandardCharsets;

/**
 * The routing trail: the entry that a republish hop with a trail ({@link Hop}) appends
 * to every record as a header, the record's place ({@link Place}), the target and the
 * time of the hop, written as Spark's {@code to_json} of that struct writes it.
 */
final class RoutingTrail {
  private RoutingTrail() {}

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
    // time. Plain text is what the generator writes unchanged; RoutingTrailTest holds the
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
    return StructuredWriter.jsonObject(json -> {
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
}
