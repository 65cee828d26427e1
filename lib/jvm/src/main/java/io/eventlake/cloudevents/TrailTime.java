package io.eventlake.cloudevents;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;

/**
 * A timestamp as Spark's {@code to_json} writes it in the session's zone ({@code
 * uuuu-MM-dd'T'HH:mm:ss.SSSXXX}), the routing trail's format. Written digit by digit:
 * {@link DateTimeFormatter#format} cost a republish of 300,000 records about a tenth of
 * its task time (two timestamps per record). Years outside 0..9999, where the pattern
 * adds a sign, go through the formatter itself. {@code TrailTimeTest} holds the two
 * equal.
 */
final class TrailTime {
  private TrailTime() {}

  static final DateTimeFormatter PATTERN =
      DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSXXX");

  /** {@code micros} after the epoch, in {@code zone}, as {@link #PATTERN} writes it. */
  static String format(long micros, ZoneId zone) {
    long seconds = Math.floorDiv(micros, 1_000_000L);
    int micro = (int) Math.floorMod(micros, 1_000_000L);
    ZoneOffset offset = zone instanceof ZoneOffset fixed
        ? fixed : zone.getRules().getOffset(Instant.ofEpochSecond(seconds));
    LocalDateTime local = LocalDateTime.ofEpochSecond(seconds, micro * 1000, offset);
    int year = local.getYear();
    if (year < 0 || year > 9999) {
      return PATTERN.withZone(zone).format(Instant.EPOCH.plus(micros, ChronoUnit.MICROS));
    }
    StringBuilder text = new StringBuilder(29);
    digits(text, year, 4).append('-');
    digits(text, local.getMonthValue(), 2).append('-');
    digits(text, local.getDayOfMonth(), 2).append('T');
    digits(text, local.getHour(), 2).append(':');
    digits(text, local.getMinute(), 2).append(':');
    digits(text, local.getSecond(), 2).append('.');
    digits(text, micro / 1000, 3);
    int total = offset.getTotalSeconds();
    if (total == 0) {
      return text.append('Z').toString();
    }
    text.append(total < 0 ? '-' : '+');
    int absolute = Math.abs(total);
    digits(text, absolute / 3600, 2).append(':');
    // XXX writes hours and minutes only: an offset's seconds (old local mean times) drop.
    return digits(text, absolute / 60 % 60, 2).toString();
  }

  /** The last hop time formatted by this thread: (micros, zone, text). */
  private record Formatted(long micros, ZoneId zone, String text) {}

  private static final ThreadLocal<Formatted> LAST_HOP_TIME = new ThreadLocal<>();

  /**
   * {@link #format} for the hop's time, which is the same for every record of a query
   * (Spark's {@code current_timestamp()}): the last one is kept per thread.
   */
  static String formatHopTime(long micros, ZoneId zone) {
    Formatted last = LAST_HOP_TIME.get();
    if (last != null && last.micros() == micros && last.zone().equals(zone)) {
      return last.text();
    }
    String text = format(micros, zone);
    LAST_HOP_TIME.set(new Formatted(micros, zone, text));
    return text;
  }

  /** {@code value} (non-negative) with leading zeros to {@code width} digits. */
  private static StringBuilder digits(StringBuilder text, int value, int width) {
    String plain = Integer.toString(value);
    for (int i = plain.length(); i < width; i++) {
      text.append('0');
    }
    return text.append(plain);
  }
}
