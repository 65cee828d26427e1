package io.eventlake.cloudevents;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The routing trail's entries ({@link RoutingTrail}), as Spark's {@code to_json} writes them. */
class RoutingTrailTest {
  @Test
  void trailTimestampsAreWrittenInTheSessionsZoneAsSparksToJsonDoes() {
    KafkaEncoder.Place place = new KafkaEncoder.Place("a", 0, 0L, -1_000L, 0L,
        java.time.ZoneId.of("Europe/Paris"));
    assertEquals("{\"topic\":\"a\",\"partition\":0,\"offset\":0,"
        + "\"timestamp\":\"1970-01-01T00:59:59.999+01:00\",\"target\":\"b\","
        + "\"at\":\"1970-01-01T01:00:00.000+01:00\"}",
        new String(RoutingTrail.trailEntry(place, "b"), StandardCharsets.UTF_8));
  }

  @Test
  void trailEntriesWrittenByHandAreWhatJacksonWrites() {
    java.util.List<KafkaEncoder.Place> places = java.util.List.of(
        new KafkaEncoder.Place("orders", 2, 41L, 1_715_000_000_123_456L, 1_764_000_000_000_000L,
            java.time.ZoneOffset.UTC),
        new KafkaEncoder.Place("a.b-c_D9", Integer.MIN_VALUE, Long.MAX_VALUE, -1L, 0L,
            java.time.ZoneId.of("America/St_Johns")),
        new KafkaEncoder.Place(null, null, null, null, null, java.time.ZoneOffset.UTC),
        new KafkaEncoder.Place("t", 0, 0L, null, 5L, java.time.ZoneId.of("Asia/Kolkata")));
    for (KafkaEncoder.Place place : places) {
      for (String target : java.util.List.of("b", "orders.bykey")) {
        assertEquals(
            new String(RoutingTrail.jsonTrailEntry(place, target), StandardCharsets.UTF_8),
            new String(RoutingTrail.trailEntry(place, target), StandardCharsets.UTF_8),
            place + " -> " + target);
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"quote\"d", "back\\slash", "tab\there", "caf\u00e9", "del\u007f"})
  void trailTextThatJsonEscapesGoesThroughJackson(String topic) {
    assertFalse(RoutingTrail.isPlainText(topic));
    KafkaEncoder.Place place = new KafkaEncoder.Place(topic, 1, 2L, 3L, 4L,
        java.time.ZoneOffset.UTC);
    assertArrayEquals(RoutingTrail.jsonTrailEntry(place, "b"),
        RoutingTrail.trailEntry(place, "b"));
  }

  @Test
  void aHopTimeIsFormattedOnceAndStaysRightWhenItChanges() {
    java.time.ZoneId paris = java.time.ZoneId.of("Europe/Paris");
    assertEquals(TrailTime.format(0L, paris), TrailTime.formatHopTime(0L, paris));
    assertEquals(TrailTime.format(0L, paris), TrailTime.formatHopTime(0L, paris));
    assertEquals(TrailTime.format(0L, java.time.ZoneOffset.UTC),
        TrailTime.formatHopTime(0L, java.time.ZoneOffset.UTC));
    assertEquals(TrailTime.format(1_000L, paris), TrailTime.formatHopTime(1_000L, paris));
  }

  @Test
  void trailLeavesOutWhatIsNullAsToJsonDoes() {
    KafkaEncoder.Place place = new KafkaEncoder.Place(null, null, 3L, null, null,
        java.time.ZoneOffset.UTC);
    assertEquals("{\"offset\":3,\"target\":\"b\"}",
        new String(RoutingTrail.trailEntry(place, "b"), StandardCharsets.UTF_8));
  }
}
