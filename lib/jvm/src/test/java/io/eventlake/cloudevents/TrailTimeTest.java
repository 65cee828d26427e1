package io.eventlake.cloudevents;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The trail's timestamps, written digit by digit, are what the pattern writes. */
class TrailTimeTest {
  private static final List<ZoneId> ZONES = List.of(
      ZoneOffset.UTC, ZoneId.of("UTC"), ZoneId.of("Europe/Paris"), ZoneId.of("America/St_Johns"),
      ZoneId.of("Asia/Kolkata"), ZoneOffset.ofHoursMinutesSeconds(-3, -7, -30),
      ZoneId.of("Africa/Monrovia"));

  private static String byPattern(long micros, ZoneId zone) {
    return TrailTime.PATTERN.withZone(zone).format(Instant.EPOCH.plus(micros, ChronoUnit.MICROS));
  }

  @Test
  void everyInstantAndZoneIsWrittenAsThePatternWritesIt() {
    Random random = new Random(7);
    long[] edges = {0L, -1L, 1L, -1_000L, 999L, 1_000L, 86_399_999_999L,
        253_402_300_799_999_999L, 253_402_300_800_000_000L, -62_167_219_200_000_000L,
        -62_167_219_200_000_001L, 1_700_000_000_123_456L};
    for (ZoneId zone : ZONES) {
      for (long micros : edges) {
        assertEquals(byPattern(micros, zone), TrailTime.format(micros, zone), micros + " " + zone);
      }
      for (int i = 0; i < 20_000; i++) {
        // Years 1 to 9999 and a few beyond on either side.
        long micros = (long) ((random.nextDouble() * 2.6e17) - 6.4e16) * 1_000L
            + random.nextInt(1_000);
        assertEquals(byPattern(micros, zone), TrailTime.format(micros, zone), micros + " " + zone);
      }
    }
  }
}
