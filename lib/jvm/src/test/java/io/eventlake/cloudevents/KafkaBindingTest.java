package io.eventlake.cloudevents;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.eventlake.cloudevents.KafkaBinding.Decoded;
import io.eventlake.cloudevents.KafkaBinding.Reason;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The binding's rules, record by record, without Spark. */
class KafkaBindingTest {
  private static final String[] STRUCTURED = {"content-type", "application/cloudevents+json"};

  /** Headers as alternating key and value; a null value stays null. */
  static Decoded decode(String value, String... headers) {
    return decode(value == null ? null : value.getBytes(StandardCharsets.UTF_8), headers);
  }

  static Decoded decode(byte[] value, String... headers) {
    List<String> keys = new ArrayList<>();
    List<byte[]> values = new ArrayList<>();
    for (int i = 0; i < headers.length; i += 2) {
      keys.add(headers[i]);
      values.add(headers[i + 1] == null ? null : headers[i + 1].getBytes(StandardCharsets.UTF_8));
    }
    return KafkaBinding.decode(
        value, keys.toArray(new String[0]), values.toArray(new byte[0][]), keys.size());
  }

  static String[] binary(String... more) {
    List<String> headers = new ArrayList<>(List.of(
        "ce_specversion", "1.0", "ce_id", "id-1", "ce_source", "/s", "ce_type", "t"));
    headers.addAll(List.of(more));
    return headers.toArray(new String[0]);
  }

  static String json(String members) {
    return "{\"specversion\":\"1.0\",\"id\":\"id-1\",\"source\":\"/s\",\"type\":\"t\""
        + (members.isEmpty() ? "" : "," + members) + "}";
  }

  static Decoded structured(String value) {
    return decode(value, STRUCTURED);
  }

  @Test
  void binaryEventTakesAttributesFromHeadersAndDataFromTheValue() {
    Decoded event = decode("hello", binary("content-type", "text/plain", "ce_traceparent", "00-1"));
    assertNull(event.reason, event.detail);
    assertEquals("binary", event.contentMode);
    assertEquals("id-1", event.attributes.get("id"));
    assertEquals("text/plain", event.attributes.get("datacontenttype"));
    assertArrayEquals("hello".getBytes(StandardCharsets.UTF_8), event.data);
    assertEquals(Map.of("traceparent", "00-1"), event.extensions);
  }

  @Test
  void binaryRecordWithoutValueIsAnEventWithoutData() {
    Decoded event = decode((String) null, binary());
    assertNull(event.reason);
    assertNull(event.data);
  }

  @Test
  void recordWithoutValueOrCeHeadersIsAPlainTombstone() {
    assertEquals(Reason.PLAIN_TOMBSTONE, decode((String) null).reason);
  }

  @Test
  void contentTypeDecidesTheModeNotTheCeHeaders() {
    Decoded event = decode(json(""), "content-type", "application/cloudevents+json",
        "ce_specversion", "0.3", "ce_id", "from-header");
    assertNull(event.reason, event.detail);
    assertEquals("structured", event.contentMode);
    assertEquals("id-1", event.attributes.get("id"));
  }

  @Test
  void structuredJsonDataIsCompactWithMembersSorted() {
    Decoded event = structured(json("\"data\": {\"z\": 1, \"a\": [true, null, \"\u00fc\"]}"));
    assertNull(event.reason, event.detail);
    assertEquals("{\"a\":[true,null,\"\u00fc\"],\"z\":1}",
        new String(event.data, StandardCharsets.UTF_8));
  }

  @Test
  void stringDataUnderAJsonMediaTypeIsItsJsonText() {
    Decoded json = structured(json("\"datacontenttype\":\"application/json\",\"data\":\"hi\""));
    Decoded text = structured(json("\"datacontenttype\":\"text/plain\",\"data\":\"hi\""));
    assertEquals("\"hi\"", new String(json.data, StandardCharsets.UTF_8));
    assertEquals("hi", new String(text.data, StandardCharsets.UTF_8));
  }

  @Test
  void dataBase64IsDecoded() {
    Decoded event = structured(json("\"data_base64\":\"aGVsbG8=\""));
    assertArrayEquals("hello".getBytes(StandardCharsets.UTF_8), event.data);
  }

  @Test
  void onlyDataFromTheJsonDataMemberIsMarkedJson() {
    assertTrue(structured(json("\"data\":{\"a\":1}")).dataIsJson);
    assertTrue(structured(json("\"data\":\"s\"")).dataIsJson);
    assertFalse(structured(json("\"datacontenttype\":\"text/plain\",\"data\":\"s\"")).dataIsJson);
    assertFalse(structured(json("\"data_base64\":\"eyJhIjoxfQ==\"")).dataIsJson);
    assertFalse(decode("{}", binary("content-type", "application/json")).dataIsJson);
  }

  @ParameterizedTest
  @ValueSource(strings = {"{\"a\":1}}", "{\"a\":1} {\"b\":2}", "", "  ", "{\"a\":1,\"a\":2}",
      "{\"id\":\"x\"", "[1]x"})
  void valueThatIsNotExactlyOneJsonValueIsMalformed(String value) {
    assertEquals(Reason.MALFORMED_JSON, structured(value).reason);
  }

  @Test
  void duplicateMemberDeepInsideDataIsMalformed() {
    assertEquals(Reason.MALFORMED_JSON, structured(json("\"data\":{\"x\":{\"a\":1,\"a\":2}}")).reason);
  }

  @Test
  void nestingBeyondTheLimitIsMalformedAndWithinItIsKept() {
    int depth = JsonEvent.MAX_DEPTH + 10;
    String deep = "[".repeat(depth) + "]".repeat(depth);
    assertEquals(Reason.MALFORMED_JSON, structured(json("\"data\":" + deep)).reason);
    String shallow = "[".repeat(100) + "]".repeat(100);
    assertEquals(shallow,
        new String(structured(json("\"data\":" + shallow)).data, StandardCharsets.UTF_8));
  }

  @Test
  void rawControlCharacterInAJsonStringIsMalformed() {
    assertEquals(Reason.MALFORMED_JSON, structured(json("\"data\":{\"a\":\"x\u0000y\"}")).reason);
  }

  @Test
  void invalidUtf8ValueIsMalformed() {
    byte[] value = json("\"subject\":\"#\"").getBytes(StandardCharsets.UTF_8);
    int at = new String(value, StandardCharsets.UTF_8).indexOf('#');
    value[at] = (byte) 0xFF;
    assertEquals(Reason.MALFORMED_JSON, decode(value, STRUCTURED).reason);
  }

  @ParameterizedTest
  @ValueSource(strings = {"C080", "E08080", "EDA080", "F4908080", "80", "C2"})
  void utf8RejectsOverlongSurrogatesAndTruncation(String hex) {
    assertFalse(Utf8.isValid(java.util.HexFormat.of().parseHex(hex)));
  }

  /** A bad sequence is found after any run of ASCII, and a range is checked alone. */
  @ParameterizedTest
  @ValueSource(ints = {0, 1, 7, 8, 9, 15, 16, 17})
  void utf8FindsABadSequenceAfterAnyRunOfAscii(int asciiBefore) {
    String ascii = "abcdefghijklmnopq".substring(0, asciiBefore);
    for (String bad : List.of("C080", "EDA080", "FF", "C2")) {
      byte[] bytes = java.util.HexFormat.of().parseHex(
          java.util.HexFormat.of().formatHex(ascii.getBytes(StandardCharsets.US_ASCII)) + bad
              + "7a7a7a7a7a7a7a7a7a");
      assertFalse(Utf8.isValid(bytes), asciiBefore + " ASCII bytes then " + bad);
      assertTrue(Utf8.isValid(bytes, 0, asciiBefore), "the ASCII run alone is valid");
    }
  }

  @Test
  void structuredJsonDataIsWrittenSortedWithEscapesAsJacksonWritesThem() {
    Decoded event = structured(json(
        "\"data\": {\"b\": \"plain text \u00e9\u20ac\", \"a\": \"esc\\\"aped\\u00e9\\n\"}"));
    assertNull(event.reason, event.detail);
    assertEquals("{\"a\":\"esc\\\"aped\u00e9\\n\",\"b\":\"plain text \u00e9\u20ac\"}",
        new String(event.data, StandardCharsets.UTF_8));
  }

  @Test
  void utf8AcceptsEveryPlane() {
    assertTrue(Utf8.isValid("a\u00fc\u65e5\uD83D\uDE00".getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void duplicateCeHeaderAndTwoContentTypesAreRejected() {
    assertEquals(Reason.DUPLICATE_HEADER, decode("x", binary("ce_id", "other")).reason);
    assertEquals(Reason.DUPLICATE_HEADER,
        decode(json(""), "content-type", "application/cloudevents+json", "content-type", "a/b")
            .reason);
  }

  @Test
  void attributeNamesAreLowercaseLettersAndDigits() {
    assertEquals(Reason.INVALID_ATTRIBUTE_NAME, decode("x", binary("ce_Foo", "v")).reason);
    assertEquals(Reason.INVALID_ATTRIBUTE_NAME, decode("x", binary("ce_data", "v")).reason);
    assertEquals(Reason.INVALID_ATTRIBUTE_NAME, structured(json("\"foo\\n\":\"v\"")).reason);
  }

  // --- the core specification's type system ---------------------------------------

  @ParameterizedTest
  @ValueSource(strings = {"a\u0000b", "tab\t", "del\u007f", "c1\u0085", "\uFDD0", "\uFFFE",
      "\uD83F\uDFFF"})
  void stringsWithForbiddenCharactersAreRejectedInBinaryMode(String subject) {
    assertEquals(Reason.INVALID_CHARACTERS, decode("x", binary("ce_subject", subject)).reason);
  }

  @ParameterizedTest
  @ValueSource(strings = {"\\u0000", "\\u001f", "\\u0085", "\\ud800", "\\udc00x", "\\ufdef"})
  void stringsWithForbiddenCharactersAreRejectedInStructuredMode(String escaped) {
    assertEquals(Reason.INVALID_CHARACTERS,
        structured(json("\"subject\":\"a" + escaped + "\"")).reason);
    assertEquals(Reason.INVALID_CHARACTERS,
        structured(json("\"comexample\":\"a" + escaped + "\"")).reason);
  }

  @Test
  void allowedUnicodeIsKept() {
    Decoded event = structured(json("\"subject\":\"\u00fc\u65e5\\ud83d\\ude00 \u00a0\""));
    assertNull(event.reason, event.detail);
    assertEquals("\u00fc\u65e5\uD83D\uDE00 \u00a0", event.attributes.get("subject"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"subject", "dataschema", "datacontenttype"})
  void presentOptionalAttributeMustNotBeEmpty(String name) {
    assertEquals(Reason.EMPTY_OPTIONAL_ATTRIBUTE, decode("x", binary("ce_" + name, "")).reason);
    assertEquals(Reason.EMPTY_OPTIONAL_ATTRIBUTE,
        structured(json("\"" + name + "\":\"\"")).reason);
  }

  @Test
  void emptyContentTypeHeaderIsAnEmptyDatacontenttype() {
    assertEquals(Reason.EMPTY_OPTIONAL_ATTRIBUTE,
        decode("x", binary("content-type", "")).reason);
  }

  @ParameterizedTest
  @ValueSource(strings = {"1.5", "5.0", "1e2", "2147483648", "-2147483649",
      "99999999999999999999"})
  void extensionNumbersMustBe32BitIntegers(String number) {
    Decoded event = structured(json("\"count\":" + number));
    assertEquals(Reason.INVALID_ATTRIBUTE_TYPE, event.reason, number);
  }

  @Test
  void integerExtensionsKeepTheirValue() {
    Decoded event = structured(json("\"a\":2147483647,\"b\":-2147483648,\"c\":-0,\"d\":true"));
    assertNull(event.reason, event.detail);
    assertEquals(Map.of("a", "2147483647", "b", "-2147483648", "c", "0", "d", "true"),
        event.extensions);
  }

  // --- time --------------------------------------------------------------------------

  @Test
  void timesAreRfc3339WithinYears0001To9999() {
    assertEquals(1522900584_000000L, Rfc3339.parse("2018-04-05T03:56:24Z"));
    assertEquals(1522893384_123456L, Rfc3339.parse("2018-04-05t03:56:24.1234567+02:00"));
    assertEquals(Rfc3339.MIN_MICROS, Rfc3339.parse("0001-01-01T00:00:00Z"));
    assertEquals(Rfc3339.MAX_MICROS, Rfc3339.parse("9999-12-31T23:59:59.999999Z"));
    assertEquals(Rfc3339.OUT_OF_RANGE, Rfc3339.parse("0001-01-01T00:30:00+01:00"));
    assertEquals(Rfc3339.OUT_OF_RANGE, Rfc3339.parse("9999-12-31T23:59:59-01:00"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"2018-04-05 03:56:24Z", "2018-02-30T00:00:00Z", "2018-04-05T03:56:24",
      "0000-06-01T00:00:00Z", "10000-01-01T00:00:00Z", "2018-04-05T03:56:24Z\n",
      "2018-04-05T24:00:00Z", "2018-04-05T03:56:60Z", "2018-04-05T03:56:24.Z",
      "2018-04-05T03:56:24+2:00", "yesterday", ""})
  void notRfc3339(String time) {
    assertEquals(Rfc3339.NOT_RFC3339, Rfc3339.parse(time), time);
    assertEquals(Reason.INVALID_TIME, decode("x", binary("ce_time", time)).reason);
  }

  @Test
  void conflictingDatacontenttypeIsRejected() {
    assertEquals(Reason.CONFLICTING_DATACONTENTTYPE,
        decode("x", binary("content-type", "text/plain", "ce_datacontenttype", "a/b")).reason);
  }

  @Test
  void detailIsCutAtTheLimit() {
    String longName = "X".repeat(5000);
    Decoded reject = decode("x", binary("ce_" + longName, "v"));
    assertEquals(KafkaBinding.DETAIL_MAX_CHARS, reject.detail.length());
  }
  /** Without its data kept, a structured event is checked exactly as with it. */
  @ParameterizedTest
  @ValueSource(strings = {
    "\"data\":{\"a\":1,\"b\":[1,{\"c\":null}]}",
    "\"data\":{\"a\":1,\"a\":2}",
    "\"data\":[{\"x\":1,\"x\":1}]",
    "\"data\":\"bad escape \\q\"",
    "\"data\":\"text\",\"datacontenttype\":\"text/plain\"",
    "\"data\":\"json\"",
    "\"data\":null",
    "\"data\":1,\"data_base64\":\"AA==\"",
    "\"data_base64\":\"not base64!\"",
    "\"data_base64\":\"AAEC\"",
    "\"data\":{\"n\":01}",
  })
  void withoutDataAStructuredEventHasTheSameFateAndAttributes(String members) {
    byte[] value = json(members).getBytes(StandardCharsets.UTF_8);
    String[] keys = {"content-type"};
    byte[][] values = {"application/cloudevents+json".getBytes(StandardCharsets.UTF_8)};
    Decoded with = KafkaBinding.decode(value, keys, values, 1, false, true);
    Decoded without = KafkaBinding.decode(value, keys, values, 1, false, false);
    assertEquals(with.reason, without.reason, members);
    assertEquals(with.detail, without.detail, members);
    assertEquals(with.attributes, without.attributes, members);
    assertEquals(with.extensions, without.extensions, members);
    assertEquals(with.dataIsJson, without.dataIsJson, members);
    assertNull(without.data, members);
    assertNull(without.dataJson, members);
  }

  @Test
  void withoutDataABinaryEventHasTheSameFateAndNoData() {
    String[] keys = {"ce_specversion", "ce_id", "ce_source", "ce_type", "content-type"};
    byte[][] values = {"1.0".getBytes(), "i".getBytes(), "/s".getBytes(), "t".getBytes(),
        "application/json".getBytes()};
    byte[] value = "{\"a\":1}".getBytes(StandardCharsets.UTF_8);
    Decoded with = KafkaBinding.decode(value, keys, values, keys.length, true, true);
    Decoded without = KafkaBinding.decode(value, keys, values, keys.length, true, false);
    assertNull(without.reason, without.detail);
    assertEquals(with.attributes, without.attributes);
    assertNull(without.data);
    assertNull(without.dataJson);
    assertFalse(without.dataJsonInvalid);
  }
}
