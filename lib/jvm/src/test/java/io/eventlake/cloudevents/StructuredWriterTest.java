package io.eventlake.cloudevents;

import static io.eventlake.cloudevents.KafkaBindingTest.binary;
import static io.eventlake.cloudevents.KafkaEncoderTest.REQUIRED_MEMBERS;
import static io.eventlake.cloudevents.KafkaEncoderTest.encode;
import static io.eventlake.cloudevents.KafkaEncoderTest.member;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.eventlake.cloudevents.KafkaEncoderTest.Record;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Binary events written in structured mode ({@link StructuredWriter}), through the encoder. */
class StructuredWriterTest {
  private static final String STRUCTURED_CT = KafkaEncoder.STRUCTURED_CONTENT_TYPE;

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

  // --- exactly one JSON value (formerly eventlake.json_shape's checks) ----------------

  static final int DEEP = 900;

  @ParameterizedTest
  @ValueSource(strings = {"{\"a\":1}", " {\"a\":1} \n", "{\"a\":\"}\"}", "{\"a\":\"\\\"}\"}",
      "[1,2]", "\"s\"", "null", "\"x\"", "-1.5e3", " [1, {\"b\": \"}{\"}]\n"})
  void singleJsonValues(String text) {
    assertTrue(StructuredWriter.isSingleJsonValue(text), text);
  }

  @Test
  void deeplyNestedSingleJsonValue() {
    assertTrue(StructuredWriter.isSingleJsonValue("[".repeat(DEEP) + "]".repeat(DEEP)));
  }

  /** Text that lenient parsers (Spark's among them) take as its first value. */
  @ParameterizedTest
  @ValueSource(strings = {"{\"a\":1}}", "{\"a\":1} x", "{\"a\":1}, 2]", "{\"a\":1}]",
      "{\"a\":1},", "{\"a\":1}{\"b\":2}", "1 2", "true false", "{\"a\":1} {\"b\":2}", "[1]]",
      "nul", "", "{\"a\":1},\"\u007feventlake-end-of-value-5b1f\"]",
      "{\"a\":1},\"\\u007feventlake-end-of-value-5b1f\"]"})
  void notExactlyOneJsonValue(String text) {
    assertFalse(StructuredWriter.isSingleJsonValue(text), text);
  }
}
