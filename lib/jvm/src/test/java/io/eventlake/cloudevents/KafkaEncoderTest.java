package io.eventlake.cloudevents;

import static io.eventlake.cloudevents.KafkaBindingTest.binary;
import static io.eventlake.cloudevents.KafkaBindingTest.json;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.eventlake.cloudevents.KafkaBinding.Decoded;
import io.eventlake.cloudevents.KafkaEncoder.Encoded;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The sender side's rules, record by record, without Spark: decode, then encode. */
class KafkaEncoderTest {
  private static final String STRUCTURED_CT = KafkaEncoder.STRUCTURED_CONTENT_TYPE;

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
        record.values().toArray(new byte[0][]), record.keys().size(), mode, keyAttribute);
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

  // --- binary -> structured -----------------------------------------------------------

  @Test
  void binaryToStructuredWritesAttributesAsTheirHeaderTextAndJsonDataVerbatim() {
    Record record = Record.of("{\"amount\": 1.50, \"items\": [1, 2]}", binary(
        "ce_time", "2024-05-06T07:08:09.123456789+02:00", "ce_subject", "order-1",
        "ce_partitionkey", "cust-1", "content-type", "application/json"));
    Record out = encode(record, "structured");
    assertEquals("{" + REQUIRED_MEMBERS + "," + member("datacontenttype", "application/json")
        + "," + member("subject", "order-1") + ","
        + member("time", "2024-05-06T07:08:09.123456789+02:00") + ","
        + member("partitionkey", "cust-1") + ",\"data\":{\"amount\": 1.50, \"items\": [1, 2]}}",
        out.valueText());
    assertEquals(List.of("content-type=" + STRUCTURED_CT), out.headerTexts());
    assertNull(out.decoded().reason, out.decoded().detail);
  }

  @Test
  void binaryDataWithoutContentTypeIsReadAsJsonWhenItIsOneJsonValue() {
    assertEquals("{" + REQUIRED_MEMBERS + ",\"data\":[1,2]}",
        encode(Record.of("[1,2]", binary()), "structured").valueText());
  }

  @Test
  void textDataUnderATextMediaTypeBecomesAJsonString() {
    Record out = encode(Record.of("h\u00e9llo\n\"x\"", binary("content-type",
        "text/plain; charset=utf-8")), "structured");
    assertEquals("{" + REQUIRED_MEMBERS + ","
        + member("datacontenttype", "text/plain; charset=utf-8")
        + ",\"data\":\"h\u00e9llo\\n\\\"x\\\"\"}", out.valueText());
  }

  @ParameterizedTest
  @ValueSource(strings = {"application/xml", "image/svg+xml", "TEXT/CSV ; x=1"})
  void xmlAndAnyTextTypeAreText(String mediaType) {
    Record out = encode(Record.of("<a/>", binary("content-type", mediaType)), "structured");
    assertTrue(out.valueText().endsWith(",\"data\":\"<a/>\"}"), out.valueText());
  }

  @Test
  void bytesBecomeDataBase64() {
    Record out = encode(Record.of(new byte[] {(byte) 0xff, 0, 0x10},
        binary("content-type", "application/octet-stream")), "structured");
    assertTrue(out.valueText().endsWith(",\"data_base64\":\"/wAQ\"}"), out.valueText());
  }

  @Test
  void textThatIsNotUtf8BecomesDataBase64() {
    Record out = encode(Record.of(new byte[] {'a', (byte) 0xff},
        binary("content-type", "text/plain")), "structured");
    assertTrue(out.valueText().endsWith(",\"data_base64\":\"Yf8=\"}"), out.valueText());
  }

  /** JSON-typed data that cannot stand in the event as is: kept exactly, as base64. */
  @ParameterizedTest
  @ValueSource(strings = {" {\"a\":1}", "\n[1]", "{\"a\":1}}", "{\"a\":1} {\"b\":2}", "1 2",
      "{\"a\":1,\"a\":2}", "", "nul", "[1]]", "{\"a\":\"x\u0001\"}", "\uFEFF{\"a\":1}"})
  void jsonDataThatIsNotExactlyOneValueBecomesDataBase64(String data) {
    Record record = Record.of(data, binary("content-type", "application/json"));
    Record out = encode(record, "structured");
    assertTrue(out.valueText().contains(",\"data_base64\":\""), out.valueText());
    assertArrayEquals(record.value(), out.decoded().data);
  }

  @Test
  void binaryEventWithoutDataHasNoDataMember() {
    Record out = encode(Record.of((String) null, binary("ce_partitionkey", "cust-2")),
        "structured");
    assertEquals("{" + REQUIRED_MEMBERS + "," + member("partitionkey", "cust-2") + "}",
        out.valueText());
  }

  @Test
  void otherHeadersAreCarriedOverInOrderWithDuplicates() {
    Record record = Record.of("{}", "trace", "1", "ce_specversion", "1.0", "ce_id", "id-1",
        "ce_source", "/s", "ce_type", "t", "x", null, "content-type", "application/json",
        "trace", "dup");
    assertEquals(List.of("content-type=" + STRUCTURED_CT, "trace=1", "x", "trace=dup"),
        encode(record, "structured").headerTexts());
  }

  // --- structured -> binary -----------------------------------------------------------

  @Test
  void structuredToBinaryWritesCeHeadersAndCutsTheDataMemberVerbatim() {
    Record record = structured("{" + REQUIRED_MEMBERS + ", \"time\": \"2024-05-06t07:08:09Z\","
        + " \"priority\": 5, \"datacontenttype\": \"application/json\", \"flag\": true,"
        + " \"partitionkey\": \"cust-3\", \"data\": {\"name\": \"Zo\\u00eb\", \"tags\": [1.50]}}",
        "origin", "eu", "ce_id", "stale");
    Record out = encode(record, "binary");
    assertEquals("{\"name\": \"Zo\\u00eb\", \"tags\": [1.50]}", out.valueText());
    assertEquals(List.of("ce_specversion=1.0", "ce_id=id-1", "ce_source=/s", "ce_type=t",
        "ce_time=2024-05-06t07:08:09Z", "ce_flag=true", "ce_partitionkey=cust-3",
        "ce_priority=5", "content-type=application/json", "origin=eu"), out.headerTexts());
  }

  @ParameterizedTest
  @ValueSource(strings = {"{\"a\" : [1, {\"data\":2}]}", "\"s\\u0074r\"", "-1.5e3", "true",
      "[]", "{}", "0"})
  void theDataMemberIsCutWhereverItStands(String data) {
    String first = "{\"data\":  " + data + " ,\n" + REQUIRED_MEMBERS + "}";
    String middle = "{" + member("id", "id-1") + ",\"data\":" + data
        + ",\"specversion\":\"1.0\",\"source\":\"/s\",\"type\":\"t\"}";
    String last = "{" + REQUIRED_MEMBERS + ",\"data\":" + data + "\n}";
    assertEquals(data + " ", encode(structured(first), "binary").valueText());
    assertEquals(data, encode(structured(middle), "binary").valueText());
    assertEquals(data + "\n", encode(structured(last), "binary").valueText());
  }

  @Test
  void untypedJsonDataIsApplicationJsonAndOtherDataStaysUntyped() {
    assertEquals(List.of("content-type=application/json"),
        contentTypes(encode(structured(json("\"data\":{\"a\":1}")), "binary")));
    assertEquals(List.of("content-type=application/json"),
        contentTypes(encode(structured(json("\"data\":\"hi\"")), "binary")));
    assertEquals(List.of(),
        contentTypes(encode(structured(json("\"data_base64\":\"eyJhIjoxfQ==\"")), "binary")));
    assertEquals(List.of(), contentTypes(encode(structured(json("\"data\":null")), "binary")));
    assertEquals(List.of("content-type=text/plain"), contentTypes(encode(
        structured(json("\"datacontenttype\":\"text/plain\",\"data\":\"hi\"")), "binary")));
  }

  private static List<String> contentTypes(Record record) {
    return record.headerTexts().stream().filter(h -> h.startsWith("content-type")).toList();
  }

  @Test
  void dataIsTheDecodersBytesWhenTheMemberIsNotJsonData() {
    Record text = encode(structured(json("\"datacontenttype\":\"text/plain\",\"data\":\"a\\nb\"")),
        "binary");
    assertEquals("a\nb", text.valueText());
    Record base64 = encode(structured(json("\"data_base64\":\"aGVsbG8=\"")), "binary");
    assertEquals("hello", base64.valueText());
    assertNull(encode(structured(json("\"data\":null")), "binary").value());
    assertNull(encode(structured(json("")), "binary").value());
  }

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

  // --- a republish hop: header transforms and the routing trail -----------------------

  static final KafkaEncoder.Place PLACE = new KafkaEncoder.Place("orders", 2, 41L,
      1_714_979_289_123_456L, 1_764_000_000_000_000L, java.time.ZoneOffset.UTC);

  static Record hop(Record record, String mode, String hopJson) {
    Decoded event = record.decoded();
    return Record.of(KafkaEncoder.encode(event, record.value(),
        record.keys().toArray(new String[0]), record.values().toArray(new byte[0][]),
        record.keys().size(), mode, null, KafkaEncoder.Hop.fromJson(hopJson), PLACE));
  }

  @Test
  void hopDropsCopiesAndInsertsHeadersAfterTheConversionThenAppendsTheTrail() {
    Record record = Record.of("{}", binary("trace", "1", "ce_subject", "order-1",
        "content-type", "application/json", "trace", "2", "keep", "k"));
    Record out = hop(record, "keep", "{\"drop_headers\":[\"trace\"],"
        + "\"attribute_headers\":[[\"subject\",\"x-subject\"],[\"dataschema\",\"x-schema\"],"
        + "[\"id\",\"x-id\"]],\"insert_headers\":[[\"team\",\"payments\"]],"
        + "\"trail_header\":\"eventlake-trail\",\"target\":\"orders.bykey\"}");
    assertSame(record.value(), out.value());
    List<String> expected = new ArrayList<>();
    for (String header : record.headerTexts()) {
      if (!header.startsWith("trace=")) {
        expected.add(header);
      }
    }
    expected.addAll(List.of("x-subject=order-1", "x-id=id-1", "team=payments",
        "eventlake-trail={\"topic\":\"orders\",\"partition\":2,\"offset\":41,"
            + "\"timestamp\":\"2024-05-06T07:08:09.123Z\",\"target\":\"orders.bykey\","
            + "\"at\":\"2025-11-24T16:00:00.000Z\"}"));
    assertEquals(expected, out.headerTexts());
  }

  @Test
  void trailTimestampsAreWrittenInTheSessionsZoneAsSparksToJsonDoes() {
    KafkaEncoder.Place place = new KafkaEncoder.Place("a", 0, 0L, -1_000L, 0L,
        java.time.ZoneId.of("Europe/Paris"));
    assertEquals("{\"topic\":\"a\",\"partition\":0,\"offset\":0,"
        + "\"timestamp\":\"1970-01-01T00:59:59.999+01:00\",\"target\":\"b\","
        + "\"at\":\"1970-01-01T01:00:00.000+01:00\"}",
        new String(KafkaEncoder.trailEntry(place, "b"), StandardCharsets.UTF_8));
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
            new String(KafkaEncoder.jsonTrailEntry(place, target), StandardCharsets.UTF_8),
            new String(KafkaEncoder.trailEntry(place, target), StandardCharsets.UTF_8),
            place + " -> " + target);
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"quote\"d", "back\\slash", "tab\there", "caf\u00e9", "del\u007f"})
  void trailTextThatJsonEscapesGoesThroughJackson(String topic) {
    assertFalse(KafkaEncoder.isPlainText(topic));
    KafkaEncoder.Place place = new KafkaEncoder.Place(topic, 1, 2L, 3L, 4L,
        java.time.ZoneOffset.UTC);
    assertArrayEquals(KafkaEncoder.jsonTrailEntry(place, "b"),
        KafkaEncoder.trailEntry(place, "b"));
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
        new String(KafkaEncoder.trailEntry(place, "b"), StandardCharsets.UTF_8));
  }

  @Test
  void aHeaderBecomesANewExtensionAsTheFirstMember() {
    String original = json("\"data\":1");
    Record out = hop(structured(original, "origin", "e\"u", "origin", "second"), "structured",
        "{\"header_attributes\":[[\"origin\",\"origin\"],[\"origin\",\"origin\"],"
            + "[\"missing\",\"gone\"]]}");
    assertEquals("{\"origin\":\"e\\\"u\"," + original.substring(1), out.valueText());
    assertEquals("e\"u", out.decoded().extensions.get("origin"));
  }

  @Test
  void aHeaderNeverReplacesAnAttributeEvenAJsonNullOne() {
    String hopJson = "{\"header_attributes\":[[\"h\",\"subject\"],[\"h\",\"ext\"],"
        + "[\"h\",\"gone\"]]}";
    String original = json("\"subject\":\"s\",\"ext\":\"x\",\"gone\":null");
    assertEquals(original, hop(structured(original, "h", "v"), "structured", hopJson)
        .valueText());
    // Converted from binary: checked against the event; each new member goes first.
    Record converted = hop(Record.of("1", binary("ce_ext", "x", "h", "v")), "structured",
        hopJson);
    assertTrue(converted.valueText().startsWith(
        "{\"gone\":\"v\",\"subject\":\"v\",\"specversion\""), converted.valueText());
  }

  @Test
  void aHeaderThatIsNotUtf8IsNoExtension() {
    Record record = structured(json(""));
    record.keys().add("h");
    record.values().add(new byte[] {(byte) 0xff});
    assertEquals(json(""), hop(record, "structured", "{\"header_attributes\":[[\"h\",\"e\"]]}")
        .valueText());
  }

  @Test
  void recordsThatAreNotEventsGetOnlyTheLiteralHeadersAndTheTrail() {
    Record reject = Record.of("plain", "x", "1");
    Record out = hop(reject, "structured", "{\"attribute_headers\":[[\"id\",\"x-id\"]],"
        + "\"header_attributes\":[[\"x\",\"x\"]],\"insert_headers\":[[\"t\",\"v\"]],"
        + "\"trail_header\":\"trail\",\"target\":\"b\"}");
    assertEquals("plain", out.valueText());
    assertEquals(List.of("x=1", "t=v"), out.headerTexts().subList(0, 2));
    assertTrue(out.headerTexts().get(2).startsWith("trail={\"topic\":\"orders\""));
  }

  @ParameterizedTest
  @ValueSource(strings = {"[]", "{\"unknown\":1}", "{\"drop_headers\":\"x\"}",
      "{\"insert_headers\":[[\"a\"]]}", "{\"trail_header\":\"t\"}", "{} {}"})
  void malformedHopsAreRefused(String json) {
    assertThrows(IllegalArgumentException.class, () -> KafkaEncoder.Hop.fromJson(json));
  }

  // --- exactly one JSON value (formerly eventlake.json_shape's checks) ----------------

  static final int DEEP = 900;

  @ParameterizedTest
  @ValueSource(strings = {"{\"a\":1}", " {\"a\":1} \n", "{\"a\":\"}\"}", "{\"a\":\"\\\"}\"}",
      "[1,2]", "\"s\"", "null", "\"x\"", "-1.5e3", " [1, {\"b\": \"}{\"}]\n"})
  void singleJsonValues(String text) {
    assertTrue(KafkaEncoder.isSingleJsonValue(text), text);
  }

  @Test
  void deeplyNestedSingleJsonValue() {
    assertTrue(KafkaEncoder.isSingleJsonValue("[".repeat(DEEP) + "]".repeat(DEEP)));
  }

  /** Text that lenient parsers (Spark's among them) take as its first value. */
  @ParameterizedTest
  @ValueSource(strings = {"{\"a\":1}}", "{\"a\":1} x", "{\"a\":1}, 2]", "{\"a\":1}]",
      "{\"a\":1},", "{\"a\":1}{\"b\":2}", "1 2", "true false", "{\"a\":1} {\"b\":2}", "[1]]",
      "nul", "", "{\"a\":1},\"\u007feventlake-end-of-value-5b1f\"]",
      "{\"a\":1},\"\\u007feventlake-end-of-value-5b1f\"]"})
  void notExactlyOneJsonValue(String text) {
    assertFalse(KafkaEncoder.isSingleJsonValue(text), text);
  }
}
