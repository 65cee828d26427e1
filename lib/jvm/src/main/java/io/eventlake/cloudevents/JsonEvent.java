package io.eventlake.cloudevents;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One pass of a streaming JSON parser over a JSON-format event (CloudEvents JSON format
 * 1.0): its members sorted into attributes, data and extensions, with what breaks the
 * format's typing rules collected on the way. Syntax errors, duplicate members (at any
 * depth), more than one value and nesting deeper than {@link #MAX_DEPTH} make the value
 * malformed.
 */
final class JsonEvent {
  /** Deeper JSON is refused (Jackson's own default); it protects the JVM's stack. */
  static final int MAX_DEPTH = 1000;

  static final JsonFactory FACTORY =
      JsonFactory.builder()
          .enable(com.fasterxml.jackson.core.StreamReadFeature.STRICT_DUPLICATE_DETECTION)
          .streamReadConstraints(
              StreamReadConstraints.builder()
                  .maxNestingDepth(MAX_DEPTH)
                  // A record can hold megabytes; Kafka's record size is the real limit.
                  .maxStringLength(Integer.MAX_VALUE)
                  .maxNameLength(Integer.MAX_VALUE)
                  .maxNumberLength(Integer.MAX_VALUE)
                  .build())
          .build();

  /** Object members compare by code point, as JSON text sorted by UTF-8 bytes would. */
  private static final Comparator<String> CODE_POINT_ORDER =
      (a, b) -> {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
          int ca = a.codePointAt(i);
          int cb = b.codePointAt(j);
          if (ca != cb) {
            return Integer.compare(ca, cb);
          }
          i += Character.charCount(ca);
          j += Character.charCount(cb);
        }
        return Integer.compare(a.length() - i, b.length() - j);
      };

  /** String members that are context attributes or data_base64, by name. */
  final Map<String, String> strings = new LinkedHashMap<>();

  /** Extensions in member order, rendered as their canonical strings. */
  final Map<String, String> extensions = new LinkedHashMap<>();

  /** Member names that are not lowercase letters and digits (data_base64 excepted). */
  final List<String> badNames = new ArrayList<>();

  /** Members whose JSON type the format does not allow where they are. */
  final List<String> badTypes = new ArrayList<>();

  /** Extensions given as JSON numbers that are not Integers (whole, 32-bit). */
  final List<String> badIntegers = new ArrayList<>();

  /** The data member: absent or null (NONE), a JSON string, or any other JSON value. */
  enum DataKind {
    NONE,
    STRING,
    OTHER
  }

  DataKind dataKind = DataKind.NONE;

  /** The data member's string value (kind STRING). */
  String dataString;

  /** The data member as compact JSON text with object members sorted (kind OTHER). */
  byte[] dataJson;

  /**
   * The data member as read (kind OTHER): maps of members sorted by code point, lists,
   * {@link Text}, {@link NumberText}, Booleans and nulls; {@link DataVariant} builds the
   * VARIANT from it.
   */
  Object dataTree;

  /** True when the value is an object; false when it is another JSON value. */
  boolean isObject;

  /** Whether the data member is built ({@link #read}). */
  private boolean withData = true;

  private JsonEvent() {}

  /**
   * Reads {@code value} (well-formed UTF-8) as one JSON value. Without {@code withData}
   * the data member is parsed (and refused when malformed, as ever) but neither its tree
   * nor its text is built: {@link #dataKind} is set, {@link #dataString}, {@link
   * #dataJson} and {@link #dataTree} stay null.
   *
   * @throws IOException when it is not exactly one JSON value (syntax, duplicate member,
   *     trailing content, nesting too deep)
   */
  static JsonEvent read(byte[] value, boolean withData) throws IOException {
    JsonEvent event = new JsonEvent();
    event.withData = withData;
    try (JsonParser parser = FACTORY.createParser(value)) {
      JsonToken first = parser.nextToken();
      if (first == null) {
        throw new IOException("no JSON value");
      }
      if (first == JsonToken.START_OBJECT) {
        event.isObject = true;
        event.readMembers(parser, value);
      } else {
        parser.skipChildren();
      }
      if (parser.nextToken() != null) {
        throw new IOException("more than one JSON value");
      }
    } catch (RuntimeException e) {
      // Jackson reports broken input with IOExceptions; anything else from it counts too.
      throw new IOException(e);
    }
    return event;
  }

  private void readMembers(JsonParser parser, byte[] input) throws IOException {
    JsonToken token;
    while ((token = parser.nextToken()) == JsonToken.FIELD_NAME) {
      String name = parser.currentName();
      JsonToken valueToken = parser.nextToken();
      if (!name.equals(KafkaBinding.DATA_BASE64) && !EventChecks.isAttributeName(name)) {
        badNames.add(name);
      }
      if (name.equals(KafkaBinding.DATA)) {
        readData(parser, valueToken, input);
      } else if (KafkaBinding.isContextAttribute(name) || name.equals(KafkaBinding.DATA_BASE64)) {
        if (valueToken == JsonToken.VALUE_STRING) {
          strings.put(name, parser.getText());
        } else if (valueToken != JsonToken.VALUE_NULL) {
          badTypes.add(name);
          parser.skipChildren();
        }
      } else {
        readExtension(parser, name, valueToken);
      }
    }
    if (token != JsonToken.END_OBJECT) {
      throw new IOException("unexpected token " + token);
    }
  }

  private void readExtension(JsonParser parser, String name, JsonToken token) throws IOException {
    switch (token) {
      case VALUE_STRING -> extensions.put(name, parser.getText());
      case VALUE_TRUE -> extensions.put(name, "true");
      case VALUE_FALSE -> extensions.put(name, "false");
      case VALUE_NULL -> {
        // A null extension is an absent one.
      }
      case VALUE_NUMBER_INT -> {
        // JSON format 2.2: an Integer is a number with only an integer component.
        String text = parser.getText();
        Integer integer = integerOrNull(text);
        if (integer == null) {
          badIntegers.add(name);
        } else {
          extensions.put(name, Integer.toString(integer));
        }
      }
      case VALUE_NUMBER_FLOAT -> badIntegers.add(name);
      default -> {
        badTypes.add(name);
        parser.skipChildren();
      }
    }
  }

  private static Integer integerOrNull(String text) {
    if (text.length() > 11) {
      return null;
    }
    try {
      return Integer.valueOf(text);
    } catch (NumberFormatException e) {
      return null;
    }
  }

  private void readData(JsonParser parser, JsonToken token, byte[] input) throws IOException {
    if (!withData) {
      // The parser still reads every token (duplicate members, escapes, nesting).
      dataKind = switch (token) {
        case VALUE_NULL -> DataKind.NONE;
        case VALUE_STRING -> DataKind.STRING;
        default -> DataKind.OTHER;
      };
      parser.skipChildren();
      return;
    }
    switch (token) {
      case VALUE_NULL -> dataKind = DataKind.NONE;
      case VALUE_STRING -> {
        dataKind = DataKind.STRING;
        dataString = Text.read(parser, input).value();
      }
      default -> {
        dataKind = DataKind.OTHER;
        Object tree = readTree(parser, token, input);
        dataTree = tree;
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        try (JsonGenerator generator = FACTORY.createGenerator(out)) {
          write(generator, tree);
        }
        dataJson = out.toByteArray();
      }
    }
  }

  /** A JSON number, kept as its text, and whether it was written as a whole number. */
  record NumberText(String text, JsonToken token) {}

  /**
   * A JSON string (a Java String in the tree stands for a member name only in maps); when it
   * was plain in the input ({@link PlainStrings}), {@code source[start, end)} is its UTF-8,
   * which the writer copies; otherwise {@code source} is null.
   */
  record Text(String value, byte[] source, int start, int end) {
    static Text read(JsonParser parser, byte[] input) throws IOException {
      int start = PlainStrings.start(parser, input);
      int end = start < 0 ? -1 : PlainStrings.end(input, start);
      if (end < 0) {
        return new Text(parser.getText(), null, 0, 0);
      }
      return new Text(
          new String(input, start, end - start, StandardCharsets.UTF_8), input, start, end);
    }
  }

  private static Object readTree(JsonParser parser, JsonToken token, byte[] input)
      throws IOException {
    switch (token) {
      case START_OBJECT -> {
        TreeMap<String, Object> members = new TreeMap<>(CODE_POINT_ORDER);
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
          String name = parser.currentName();
          members.put(name, readTree(parser, parser.nextToken(), input));
        }
        return members;
      }
      case START_ARRAY -> {
        List<Object> items = new ArrayList<>();
        JsonToken next;
        while ((next = parser.nextToken()) != JsonToken.END_ARRAY) {
          items.add(readTree(parser, next, input));
        }
        return items;
      }
      case VALUE_STRING -> {
        return Text.read(parser, input);
      }
      case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> {
        return new NumberText(parser.getText(), token);
      }
      case VALUE_TRUE -> {
        return Boolean.TRUE;
      }
      case VALUE_FALSE -> {
        return Boolean.FALSE;
      }
      case VALUE_NULL -> {
        return null;
      }
      default -> throw new IOException("unexpected token " + token);
    }
  }

  @SuppressWarnings("unchecked")
  private static void write(JsonGenerator generator, Object node) throws IOException {
    if (node instanceof Map<?, ?> map) {
      generator.writeStartObject();
      for (Map.Entry<String, Object> member : ((Map<String, Object>) map).entrySet()) {
        generator.writeFieldName(member.getKey());
        write(generator, member.getValue());
      }
      generator.writeEndObject();
    } else if (node instanceof List<?> list) {
      generator.writeStartArray();
      for (Object item : list) {
        write(generator, item);
      }
      generator.writeEndArray();
    } else if (node instanceof Text text) {
      if (text.source() != null) {
        // Plain: the bytes are what writeString would write (no escapes, UTF-8 output).
        generator.writeRawUTF8String(text.source(), text.start(), text.end() - text.start());
      } else {
        generator.writeString(text.value());
      }
    } else if (node instanceof NumberText number) {
      generator.writeNumber(number.text());
    } else if (node instanceof Boolean bool) {
      generator.writeBoolean(bool);
    } else {
      generator.writeNull();
    }
  }

  /** The JSON text of one string: how string data is stored under a JSON media type. */
  static byte[] stringAsJson(String value) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream(value.length() + 16);
    try (JsonGenerator generator = FACTORY.createGenerator(out)) {
      generator.writeString(value);
    }
    return out.toByteArray();
  }
}
