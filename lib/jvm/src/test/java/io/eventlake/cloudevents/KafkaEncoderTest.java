package io.eventlake.cloudevents;

import static io.eventlake.cloudevents.KafkaBindingTest.binary;
import static io.eventlake.cloudevents.KafkaBindingTest.json;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.eventlake.cloudevents.KafkaBinding.Decoded;
import io.eventlake.cloudevents.KafkaEncoder.Encoded;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The sender side's rules, record by record, without Spark: decode, then encode. Here the
 * copies, rejects, round trips and the Key Mapper, and the helpers the other encoder tests
 * share; each mode's writer, the hop and the trail have tests of their own.
 */
class KafkaEncoderTest {
  /** A Kafka record: value (null: none) and headers as alternating key and value. */
  record Record(byte[] value, List<String> keys, List<byte[]> values) {
    static Record of(byte[] value, String... headers) {
      List<String> keys = new ArrayList<>();
      List<byte[]> values = new ArrayList<>();
      for (int i = 0; i < headers.length; i += 2) {
        keys.add(headers[i]);
        values.add(headers[i + 1] == null ? null : utf8(headers[i + 1]));
      }
      return new Record(value, keys, values);
    }

    static Record of(String value, String... headers) {
      return of(value == null ? null : utf8(value), headers);
    }

    static Record of(Encoded encoded) {
      return new Record(encoded.value, encoded.headerKeys, encoded.headerValues);
    }

    Decoded decoded() {
      return KafkaBinding.decode(value, keys.toArray(new String[0]),
          values.toArray(new byte[0][]), keys.size());
    }

    /** Headers as "key=value" (a null value as "key"), in order. */
    List<String> headerTexts() {
      List<String> texts = new ArrayList<>();
      for (int i = 0; i < keys.size(); i++) {
        texts.add(values.get(i) == null ? keys.get(i)
            : keys.get(i) + "=" + new String(values.get(i), StandardCharsets.UTF_8));
      }
      return texts;
    }

    String valueText() {
      return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }
  }

  static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  static Encoded encode(Record record, String mode, String keyAttribute) {
    Decoded event = record.decoded();
    return KafkaEncoder.encode(event, record.value(), record.keys().toArray(new String[0]),
        record.values().toArray(new byte[0][]), record.keys().size(), mode, keyAttribute,
        Hop.NONE, null);
  }

  static Record encode(Record record, String mode) {
    return Record.of(encode(record, mode, null));
  }

  static Record structured(String value, String... more) {
    List<String> headers = new ArrayList<>(List.of("content-type",
        "application/cloudevents+json"));
    headers.addAll(List.of(more));
    return Record.of(value, headers.toArray(new String[0]));
  }

  static String member(String name, String text) {
    return "\"" + name + "\":\"" + text + "\"";
  }

  static final String REQUIRED_MEMBERS =
      member("specversion", "1.0") + "," + member("id", "id-1") + "," + member("source", "/s")
          + "," + member("type", "t");

  // --- copies, rejects and round trips ------------------------------------------------

  @Test
  void recordsAlreadyInTheWantedModeAreCopiedByteForByte() {
    Record binaryRecord = Record.of("{ \"a\" : 1 }", "z", "1", "ce_specversion", "1.0",
        "ce_id", "id-1", "ce_source", "/s", "ce_type", "t", "content-type", "application/json",
        "z", null);
    Encoded copy = encode(binaryRecord, "binary", null);
    assertSame(binaryRecord.value(), copy.value);
    assertEquals(binaryRecord.keys(), copy.headerKeys);
    assertEquals(binaryRecord.values(), copy.headerValues);

    Record structuredRecord = structured(json("\"data\" : { \"b\":2, \"a\":1 }"), "ce_id", "x");
    Encoded same = encode(structuredRecord, "structured", null);
    assertSame(structuredRecord.value(), same.value);
    assertEquals(structuredRecord.keys(), same.headerKeys);
    for (Record record : List.of(binaryRecord, structuredRecord)) {
      Encoded kept = encode(record, "keep", "id");
      assertSame(record.value(), kept.value);
      assertEquals(record.keys(), kept.headerKeys);
      assertArrayEquals(utf8("id-1"), kept.key);
    }
  }

  @Test
  void recordsThatAreNotEventsAreCopied() {
    Record reject = Record.of("plain", "x", "1");
    for (String mode : List.of("binary", "structured")) {
      Encoded out = encode(reject, mode, "partitionkey");
      assertSame(reject.value(), out.value);
      assertEquals(reject.keys(), out.headerKeys);
      assertNull(out.key);
    }
  }

  @Test
  void binaryToStructuredToBinaryGivesBackTheSameRecord() {
    List<Record> records = List.of(
        Record.of("{\"amount\": 1.50, \"items\": [1, 2]}\n", binary("trace", "1",
            "ce_time", "2024-05-06T07:08:09.123456789+02:00", "ce_zz", "z", "ce_aa", "a",
            "content-type", "application/json", "trace", "2")),
        Record.of(new byte[] {(byte) 0xff, (byte) 0xfe, 0}, binary("content-type",
            "application/octet-stream")),
        Record.of("h\u00e9llo\n", binary("content-type", "text/plain; charset=utf-8")),
        Record.of(" {\"a\":1}", binary("content-type", "application/json")),
        Record.of((String) null, binary()));
    for (Record record : records) {
      Record back = encode(encode(record, "structured"), "binary");
      assertArrayEquals(record.value(), back.value(), record.valueText());
      assertEquals(sorted(record.headerTexts()), sorted(back.headerTexts()));
    }
  }

  @Test
  void untypedJsonDataComesBackWithApplicationJsonTheOneChangeOfARoundTrip() {
    Record back = encode(encode(Record.of("[1]", binary()), "structured"), "binary");
    assertEquals("[1]", back.valueText());
    assertEquals(sorted(binary("content-type", "application/json")),
        sorted(back.headerTexts()));
  }

  private static List<String> sorted(List<String> texts) {
    return texts.stream().sorted(Comparator.naturalOrder()).toList();
  }

  private static List<String> sorted(String[] alternating) {
    List<String> texts = new ArrayList<>();
    for (int i = 0; i < alternating.length; i += 2) {
      texts.add(alternating[i] + "=" + alternating[i + 1]);
    }
    return sorted(texts);
  }

  @Test
  void structuredToBinaryToStructuredGivesBackTheSameEvent() {
    Record record = structured(json("\"time\":\"2024-05-06T07:08:09.1+01:00\",\"n\":7,"
        + "\"data\":{\"z\":1,\"a\":[true,null]}"));
    Decoded original = record.decoded();
    Decoded back = encode(encode(record, "binary"), "structured").decoded();
    assertNull(back.reason, back.detail);
    // Untyped JSON data is application/json (JSON format 3.1.2), now said explicitly.
    original.attributes.put("datacontenttype", "application/json");
    assertEquals(original.attributes, back.attributes);
    assertEquals(original.extensions, back.extensions);
    assertArrayEquals(original.data, back.data);
  }

  // --- Key Mapper ---------------------------------------------------------------------

  @Test
  void keyMapperTakesTheAttributesText() {
    Record binaryRecord = Record.of("x", binary("ce_partitionkey", "cust-1", "ce_time",
        "2024-05-06T07:08:09.000000001Z"));
    Record structuredRecord = structured(json("\"subject\":\"s-1\",\"time\":\"2024-05-06T07:08:09"
        + ".5-01:00\",\"n\":-0"));
    assertArrayEquals(utf8("cust-1"), encode(binaryRecord, "keep", "partitionkey").key);
    assertArrayEquals(utf8("2024-05-06T07:08:09.000000001Z"),
        encode(binaryRecord, "structured", "time").key);
    assertArrayEquals(utf8("id-1"), encode(binaryRecord, "binary", "id").key);
    assertArrayEquals(utf8("s-1"), encode(structuredRecord, "binary", "subject").key);
    assertArrayEquals(utf8("2024-05-06T07:08:09.5-01:00"),
        encode(structuredRecord, "keep", "time").key);
    assertArrayEquals(utf8("0"), encode(structuredRecord, "keep", "n").key);
  }

  @Test
  void keyMapperGivesNoKeyWhenTheEventLacksTheAttribute() {
    assertNull(encode(Record.of("x", binary()), "keep", "partitionkey").key);
    assertNull(encode(structured(json("")), "keep", "subject").key);
    assertNull(encode(Record.of("x", binary()), "keep", null).key);
  }

  @Test
  void unknownModeIsRefused() {
    assertThrows(IllegalArgumentException.class,
        () -> encode(Record.of("x", binary()), "avro", null));
  }
}
