package io.eventlake.cloudevents;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantBuilder;

/**
 * An event's JSON data as a Spark VARIANT ({@code data_json}), built with Spark's own
 * {@link VariantBuilder}: from the tree {@link JsonEvent} already made of a JSON-format
 * event's {@code data} member (no second parse), or by parsing data that arrived as
 * bytes (binary mode, {@code data_base64}) under a JSON media type.
 *
 * <p>A value that is not one JSON value, or too big for a variant (16 MiB), gives null:
 * the event still lands with its bytes in {@code data}.
 */
final class DataVariant {
  private DataVariant() {}

  /** The tree of {@link JsonEvent#dataTree} as a variant; null when over the size limit. */
  static Variant ofTree(Object tree) {
    try {
      VariantBuilder builder = new VariantBuilder(false);
      append(builder, tree);
      return builder.result();
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** One JSON string as a variant (string data under a JSON media type). */
  static Variant ofString(String text) {
    try {
      VariantBuilder builder = new VariantBuilder(false);
      builder.appendString(text);
      return builder.result();
    } catch (RuntimeException e) {
      return null;
    }
  }

  /**
   * {@code json} parsed as exactly one JSON value (UTF-8, no duplicate members, no more
   * than {@link JsonEvent#MAX_DEPTH} deep); null when it is not one.
   */
  static Variant parse(byte[] json) {
    try (JsonParser parser = JsonEvent.FACTORY.createParser(json)) {
      if (parser.nextToken() == null) {
        return null;
      }
      Variant variant = VariantBuilder.parseJson(parser, false);
      return parser.nextToken() == null ? variant : null;
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  @SuppressWarnings("unchecked")
  private static void append(VariantBuilder builder, Object node) {
    if (node instanceof Map<?, ?> map) {
      ArrayList<VariantBuilder.FieldEntry> fields = new ArrayList<>(map.size());
      int start = builder.getWritePos();
      for (Map.Entry<String, Object> member : ((Map<String, Object>) map).entrySet()) {
        int id = builder.addKey(member.getKey());
        fields.add(new VariantBuilder.FieldEntry(member.getKey(), id,
            builder.getWritePos() - start));
        append(builder, member.getValue());
      }
      builder.finishWritingObject(start, fields);
    } else if (node instanceof List<?> list) {
      ArrayList<Integer> offsets = new ArrayList<>(list.size());
      int start = builder.getWritePos();
      for (Object item : list) {
        offsets.add(builder.getWritePos() - start);
        append(builder, item);
      }
      builder.finishWritingArray(start, offsets);
    } else if (node instanceof JsonEvent.Text text) {
      builder.appendString(text.value());
    } else if (node instanceof JsonEvent.NumberText number) {
      appendNumber(builder, number);
    } else if (node instanceof Boolean bool) {
      builder.appendBoolean(bool);
    } else {
      builder.appendNull();
    }
  }

  /**
   * A JSON number as {@link VariantBuilder#parseJson} stores it: a whole number that fits
   * a long as an integer, else a plain decimal within 38 digits as a decimal, else a
   * double. {@code DataVariantTest} holds this equal to Spark's own parse.
   */
  static void appendNumber(VariantBuilder builder, JsonEvent.NumberText number) {
    String text = number.text();
    if (number.token() == JsonToken.VALUE_NUMBER_INT) {
      try {
        builder.appendLong(Long.parseLong(text));
        return;
      } catch (NumberFormatException tooBig) {
        // Falls through to a decimal or a double, as Spark does.
      }
    }
    if (isPlainDecimal(text)) {
      BigDecimal decimal = new BigDecimal(text);
      if (decimal.scale() <= MAX_DECIMAL_DIGITS && decimal.precision() <= MAX_DECIMAL_DIGITS) {
        builder.appendDecimal(decimal);
        return;
      }
    }
    builder.appendDouble(Double.parseDouble(text));
  }

  /** The widest decimal a variant holds (Spark's {@code MAX_DECIMAL16_PRECISION}). */
  private static final int MAX_DECIMAL_DIGITS = 38;

  private static boolean isPlainDecimal(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c != '-' && c != '.' && !(c >= '0' && c <= '9')) {
        return false;
      }
    }
    return true;
  }
}
