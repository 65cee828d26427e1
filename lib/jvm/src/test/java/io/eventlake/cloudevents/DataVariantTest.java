package io.eventlake.cloudevents;

import static io.eventlake.cloudevents.KafkaBindingTest.binary;
import static io.eventlake.cloudevents.KafkaBindingTest.decode;
import static io.eventlake.cloudevents.KafkaBindingTest.json;
import static io.eventlake.cloudevents.KafkaBindingTest.structured;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.eventlake.cloudevents.KafkaBinding.Decoded;
import java.time.ZoneOffset;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** data_json: the event's JSON data as Spark's VARIANT, in both content modes. */
class DataVariantTest {
  private static String sparkParse(String json) throws Exception {
    return VariantBuilder.parseJson(json, false).toJson(ZoneOffset.UTC);
  }

  private static String text(Variant variant) {
    assertNotNull(variant, "no data_json");
    return variant.toJson(ZoneOffset.UTC);
  }

  /** Spark's parse_json is the reference: the tree built without it must be equal. */
  @ParameterizedTest
  @ValueSource(strings = {
    "0", "-1", "127", "128", "32768", "2147483648", "9223372036854775807",
    "9223372036854775808", "-9223372036854775809", "123456789012345678901234567890123456789",
    "1.5", "-0.25", "12.50", "1e3", "1E-2", "-2.5e+10", "0.000000000000000000000000000000000000001",
    "1234567890.1234567890123456789012345678901", "1e400"
  })
  void numbersAreStoredAsSparksOwnParseStoresThem(String number) throws Exception {
    Decoded event = structured(json("\"data\":{\"n\":" + number + "}"));
    assertEquals(sparkParse("{\"n\":" + number + "}"), text(event.dataJson));
    Variant n = event.dataJson.getFieldByKey("n");
    assertEquals(VariantBuilder.parseJson(number, false).getType(), n.getType(), number);
  }

  @Test
  void structuredJsonDataIsTheVariantOfTheDataMember() throws Exception {
    String data = "{\"order\":\"o-1\",\"amount\":12.5,\"tags\":[\"a\",null,true],"
        + "\"nested\":{\"z\":1,\"a\":false},\"\u00e9\":\"\u20ac\"}";
    Decoded event = structured(json("\"data\":" + data));
    assertNull(event.reason, event.detail);
    assertEquals(sparkParse(data), text(event.dataJson));
    assertFalse(event.dataJsonInvalid);
  }

  @Test
  void structuredDataWithoutDatacontenttypeIsJsonEvenAsAString() {
    Decoded event = structured(json("\"data\":\"hello\""));
    assertEquals("\"hello\"", text(event.dataJson));
  }

  @Test
  void structuredStringDataUnderANonJsonTypeHasNoVariant() {
    Decoded event = structured(json("\"datacontenttype\":\"text/plain\",\"data\":\"hello\""));
    assertNull(event.reason, event.detail);
    assertNull(event.dataJson);
    assertFalse(event.dataJsonInvalid);
  }

  @Test
  void structuredDataBase64IsParsedUnderAJsonTypeOnly() {
    String base64 = java.util.Base64.getEncoder().encodeToString("{\"a\":1}".getBytes());
    Decoded json = structured(json(
        "\"datacontenttype\":\"application/json\",\"data_base64\":\"" + base64 + "\""));
    assertEquals("{\"a\":1}", text(json.dataJson));
    Decoded octets = structured(json("\"data_base64\":\"" + base64 + "\""));
    assertNull(octets.dataJson);
    assertFalse(octets.dataJsonInvalid);
  }

  @ParameterizedTest
  @ValueSource(strings = {
    "application/json", "application/json; charset=utf-8", "APPLICATION/JSON",
    "text/json", "application/vnd.example.order+json", "application/problem+json"
  })
  void binaryDataUnderEveryJsonMediaTypeIsParsed(String contentType) {
    Decoded event = decode("{\"amount\":3,\"order\":\"o-9\"}", binary("content-type", contentType));
    assertNull(event.reason, event.detail);
    assertEquals("{\"amount\":3,\"order\":\"o-9\"}", text(event.dataJson));
    assertFalse(event.dataJsonInvalid);
  }

  @Test
  void illFormedUtf8InsideAJsonStringLeavesNoVariant() {
    byte[] value = "{\"a\":\"ok then #\"}".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    value[value.length - 3] = (byte) 0xED; // the start of an encoded surrogate, cut short
    Decoded event = decode(value, binary("content-type", "application/json"));
    assertNull(event.reason, event.detail);
    assertNull(event.dataJson);
    assertTrue(event.dataJsonInvalid);
  }

  @Test
  void binaryDataUnderANonJsonTypeOrNoTypeHasNoVariant() {
    assertNull(decode("{\"a\":1}", binary("content-type", "text/plain")).dataJson);
    Decoded untyped = decode("{\"a\":1}", binary());
    assertNull(untyped.dataJson);
    assertFalse(untyped.dataJsonInvalid);
  }

  @ParameterizedTest
  @ValueSource(strings = {"{\"a\":", "", "{\"a\":1,\"a\":2}", "1 2", "{'a':1}", "\u00ff"})
  void malformedJsonDataLandsWithoutAVariantAndIsFlagged(String value) {
    Decoded event = decode(value, binary("content-type", "application/json"));
    assertNull(event.reason, "the event still lands: " + event.detail);
    assertNull(event.dataJson);
    assertTrue(event.dataJsonInvalid);
  }

  @Test
  void aBinaryEventWithoutDataHasNoVariantAndIsNotFlagged() {
    Decoded event = decode((String) null, binary("content-type", "application/json"));
    assertNull(event.dataJson);
    assertFalse(event.dataJsonInvalid);
  }

  @Test
  void withoutDataJsonNoVariantIsBuiltAndTheRestIsTheSame() {
    byte[] value = "{\"a\":1}".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    String[] keys = {"ce_specversion", "ce_id", "ce_source", "ce_type", "content-type"};
    byte[][] values = {"1.0".getBytes(), "i".getBytes(), "/s".getBytes(), "t".getBytes(),
        "application/json".getBytes()};
    Decoded with = KafkaBinding.decode(value, keys, values, keys.length, true, true);
    Decoded without = KafkaBinding.decode(value, keys, values, keys.length, false, true);
    assertNotNull(with.dataJson);
    assertNull(without.dataJson);
    assertFalse(without.dataJsonInvalid);
    assertEquals(with.attributes, without.attributes);
    assertEquals(new String(with.data), new String(without.data));
    Decoded structuredWithout = KafkaBinding.decode(json("\"data\":{\"a\":1}").getBytes(),
        new String[] {"content-type"}, new byte[][] {"application/cloudevents+json".getBytes()},
        1, false, true);
    assertNull(structuredWithout.reason, structuredWithout.detail);
    assertNull(structuredWithout.dataJson);
    assertEquals("{\"a\":1}", new String(structuredWithout.data));
  }

  @Test
  void rejectsHaveNoVariant() {
    Decoded reject = decode("{\"a\":1}", binary("content-type", "application/json",
        "ce_specversion", "0.3"));
    assertNotNull(reject.reason);
    assertNull(reject.dataJson);
    assertFalse(reject.dataJsonInvalid);
  }
}
