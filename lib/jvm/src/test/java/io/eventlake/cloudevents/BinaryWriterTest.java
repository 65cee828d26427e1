package io.eventlake.cloudevents;

import static io.eventlake.cloudevents.KafkaBindingTest.json;
import static io.eventlake.cloudevents.KafkaEncoderTest.REQUIRED_MEMBERS;
import static io.eventlake.cloudevents.KafkaEncoderTest.encode;
import static io.eventlake.cloudevents.KafkaEncoderTest.member;
import static io.eventlake.cloudevents.KafkaEncoderTest.structured;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.eventlake.cloudevents.KafkaEncoderTest.Record;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Structured events written in binary mode ({@link BinaryWriter}), through the encoder. */
class BinaryWriterTest {
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
}
