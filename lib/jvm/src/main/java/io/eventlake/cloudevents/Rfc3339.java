package io.eventlake.cloudevents;

/**
 * RFC 3339 5.6 date-time, as the CloudEvents Timestamp type: {@code
 * YYYY-MM-DDThh:mm:ss[.fraction](Z|+hh:mm|-hh:mm)}, "T" and "Z" in either case.
 *
 * <p>The instant must fall within years 0001-9999 in UTC, Spark's documented timestamp
 * range: a time whose offset moves it outside would be year 0 or +10000 in the table,
 * which Python readers cannot convert. A fraction beyond microseconds is truncated, as
 * Spark's own cast does. Leap seconds (second 60) are not representable and rejected.
 */
final class Rfc3339 {
  /** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z in microseconds since the epoch. */
  static final long MIN_MICROS = -62_135_596_800_000_000L;

  static final long MAX_MICROS = 253_402_300_799_999_999L;

  /** Result of {@link #parse}: not RFC 3339, or RFC 3339 outside years 0001-9999 in UTC. */
  static final long NOT_RFC3339 = Long.MIN_VALUE;

  static final long OUT_OF_RANGE = Long.MIN_VALUE + 1;

  private Rfc3339() {}

  /** Microseconds since the epoch, or {@link #NOT_RFC3339} / {@link #OUT_OF_RANGE}. */
  static long parse(String text) {
    int n = text.length();
    if (n < 20 || n > 64) {
      return NOT_RFC3339;
    }
    int year = digits(text, 0, 4);
    int month = digits(text, 5, 2);
    int day = digits(text, 8, 2);
    int hour = digits(text, 11, 2);
    int minute = digits(text, 14, 2);
    int second = digits(text, 17, 2);
    char t = text.charAt(10);
    if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0
        || text.charAt(4) != '-' || text.charAt(7) != '-' || (t != 'T' && t != 't')
        || text.charAt(13) != ':' || text.charAt(16) != ':') {
      return NOT_RFC3339;
    }
    int i = 19;
    long fractionMicros = 0;
    if (text.charAt(i) == '.') {
      i++;
      int start = i;
      while (i < n && isDigit(text.charAt(i))) {
        if (i - start < 6) {
          fractionMicros = fractionMicros * 10 + (text.charAt(i) - '0');
        }
        i++;
      }
      int count = i - start;
      if (count == 0) {
        return NOT_RFC3339;
      }
      for (int k = count; k < 6; k++) {
        fractionMicros *= 10;
      }
    }
    if (i >= n) {
      return NOT_RFC3339;
    }
    char zone = text.charAt(i);
    int offsetSeconds;
    if ((zone == 'Z' || zone == 'z') && i + 1 == n) {
      offsetSeconds = 0;
    } else if ((zone == '+' || zone == '-') && i + 6 == n && text.charAt(i + 3) == ':') {
      int offsetHours = digits(text, i + 1, 2);
      int offsetMinutes = digits(text, i + 4, 2);
      if (offsetHours < 0 || offsetMinutes < 0 || offsetHours > 23 || offsetMinutes > 59) {
        return NOT_RFC3339;
      }
      offsetSeconds = (offsetHours * 3600 + offsetMinutes * 60) * (zone == '-' ? -1 : 1);
    } else {
      return NOT_RFC3339;
    }
    // Year 0000 is RFC 3339 but before Spark's (and Python's) first representable year.
    if (year == 0 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)
        || hour > 23 || minute > 59 || second > 59) {
      return NOT_RFC3339;
    }
    long epochDay = java.time.LocalDate.of(year, month, day).toEpochDay();
    long seconds = epochDay * 86_400 + hour * 3600L + minute * 60L + second - offsetSeconds;
    long micros = seconds * 1_000_000L + fractionMicros;
    if (micros < MIN_MICROS || micros > MAX_MICROS) {
      return OUT_OF_RANGE;
    }
    return micros;
  }

  private static int daysInMonth(int year, int month) {
    return java.time.YearMonth.of(year, month).lengthOfMonth();
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  /** The decimal number of {@code count} ASCII digits at {@code start}, or -1. */
  private static int digits(String text, int start, int count) {
    int value = 0;
    for (int i = start; i < start + count; i++) {
      char c = text.charAt(i);
      if (!isDigit(c)) {
        return -1;
      }
      value = value * 10 + (c - '0');
    }
    return value;
  }
}
