package io.eventlake.cloudevents;

import static io.eventlake.cloudevents.KafkaBindingTest.binary;
import static io.eventlake.cloudevents.KafkaBindingTest.json;
import static io.eventlake.cloudevents.KafkaEncoderTest.structured;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.eventlake.cloudevents.KafkaBinding.Decoded;
import io.eventlake.cloudevents.KafkaEncoderTest.Record;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A republish hop ({@link Hop}): its options from JSON, and its header transforms and
 * trail applied by the encoder. */
class HopTest {
  static final KafkaEncoder.Place PLACE = new KafkaEncoder.Place("orders", 2, 41L,
      1_714_979_289_123_456L, 1_764_000_000_000_000L, java.time.ZoneOffset.UTC);

  static Record hop(Record record, String mode, String hopJson) {
    Decoded event = record.decoded();
    return Record.of(KafkaEncoder.encode(event, record.value(),
        record.keys().toArray(new String[0]), record.values().toArray(new byte[0][]),
        record.keys().size(), mode, null, Hop.fromJson(hopJson), PLACE));
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
    assertThrows(IllegalArgumentException.class, () -> Hop.fromJson(json));
  }
}
