package io.eventlake.cloudevents;

import java.util.Arrays;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * {@code cloudevents_from_kafka(value, headers[, data_json[, data]])}: the Kafka binding as a
 * expression over the Kafka source's {@code value} (binary) and {@code headers}
 * (array&lt;struct&lt;key:string,value:binary&gt;&gt;), returning one struct per record:
 * the context attributes, time, data, data_json (a VARIANT), data_is_json,
 * data_json_invalid, extensions, content_mode, reject_reason and reject_detail. Every
 * rule lives in {@link KafkaBinding}; this class only moves Spark's internal values in
 * and out, like spark-avro's {@code from_avro}. With the constant {@code data_json} false,
 * the VARIANT is not built (the field is null): for callers that forward events. With the
 * constant {@code data} false, neither is the data (both fields null; the data is still
 * checked): for callers that need each record's fate and attributes only.
 *
 * <p>The generated code evaluates both children in place and makes one call into the
 * decoder per record ({@link #decode}), as spark-avro's {@code from_avro} does. Not being
 * a {@code CodegenFallback} matters: Spark keeps an expression of that kind out of
 * whole-stage code generation, and the projection around it then copied every record
 * (its 1 KB of data included) into a row of its own between the Kafka scan and the next
 * stage.
 */
public final class CloudEventsFromKafka extends KafkaRecordExpression {
  private static final long serialVersionUID = 1L;

  public static final String NAME = "cloudevents_from_kafka";

  /** The string attributes, in result order (time follows them). */
  private static final String[] STRING_ATTRIBUTES = {
    "id", "source", "specversion", "type", "datacontenttype", "dataschema", "subject"
  };

  /** The result type; field order is the events table's attribute order. */
  public static final StructType RESULT_TYPE =
      new StructType(
          Stream.concat(
                  Arrays.stream(STRING_ATTRIBUTES).map(name -> field(name, DataTypes.StringType)),
                  Stream.of(
                      field("time", DataTypes.TimestampType),
                      field("data", DataTypes.BinaryType),
                      field("data_json", DataTypes.VariantType),
                      field("data_is_json", DataTypes.BooleanType),
                      field("data_json_invalid", DataTypes.BooleanType),
                      field("extensions", DataTypes.createMapType(
                          DataTypes.StringType, DataTypes.StringType, true)),
                      field("content_mode", DataTypes.StringType),
                      field("reject_reason", DataTypes.StringType),
                      field("reject_detail", DataTypes.StringType)))
              .toArray(StructField[]::new));

  private final Expression value;
  private final Expression headers;
  private final boolean withDataJson;
  private final boolean withData;

  public CloudEventsFromKafka(
      Expression value, Expression headers, boolean withDataJson, boolean withData) {
    super(NAME, 2, value, headers, withDataJson, withData);
    this.value = value;
    this.headers = headers;
    this.withDataJson = withDataJson;
    this.withData = withData;
  }

  @Override
  public DataType dataType() {
    return RESULT_TYPE;
  }

  @Override
  public TypeCheckResult checkInputDataTypes() {
    if (isValueType(value.dataType()) && isHeadersType(headers.dataType())) {
      return TypeCheckResult.TypeCheckSuccess$.MODULE$;
    }
    return new TypeCheckResult.TypeCheckFailure(
        NAME + " takes the Kafka source's value (binary) and headers "
            + "(array<struct<key:string,value:binary>>, includeHeaders=true); got "
            + value.dataType().simpleString() + " and " + headers.dataType().simpleString());
  }

  @Override
  public Object eval(InternalRow row) {
    return decode((byte[]) value.eval(row), (ArrayData) headers.eval(row));
  }

  /**
   * The binding applied to one record's value (null: none) and headers (null: none):
   * the result row of {@link #RESULT_TYPE}. Called by {@link #eval} and by generated code.
   */
  public InternalRow decode(byte[] valueBytes, ArrayData headerArray) {
    Headers read = Headers.of(headerArray);
    return toRow(KafkaBinding.decode(valueBytes, read.keys(), read.values(), read.count(),
        withDataJson, withData));
  }

  private static InternalRow toRow(KafkaBinding.Decoded decoded) {
    Object[] fields = new Object[RESULT_TYPE.size()];
    for (int i = 0; i < STRING_ATTRIBUTES.length; i++) {
      fields[i] = utf8(decoded.attributes.get(STRING_ATTRIBUTES[i]));
    }
    fields[7] = decoded.hasTime ? (Object) decoded.timeMicros : null;
    fields[8] = decoded.data;
    fields[9] = decoded.dataJson == null
        ? null
        : new VariantVal(decoded.dataJson.getValue(), decoded.dataJson.getMetadata());
    fields[10] = decoded.dataIsJson;
    fields[11] = decoded.dataJsonInvalid;
    if (decoded.extensions != null) {
      Object[] names = new Object[decoded.extensions.size()];
      Object[] texts = new Object[names.length];
      int i = 0;
      for (Map.Entry<String, String> extension : decoded.extensions.entrySet()) {
        names[i] = UTF8String.fromString(extension.getKey());
        texts[i] = UTF8String.fromString(extension.getValue());
        i++;
      }
      fields[12] = new ArrayBasedMapData(new GenericArrayData(names), new GenericArrayData(texts));
    }
    fields[13] = utf8(decoded.contentMode);
    fields[14] = utf8(decoded.reason);
    fields[15] = utf8(decoded.detail);
    return new GenericInternalRow(fields);
  }

  private static UTF8String utf8(String text) {
    return text == null ? null : UTF8String.fromString(text);
  }

  @Override
  public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
    return callPerRecord(ctx, ev, "cloudEventsFromKafka", "decode",
        "byte[]", ArrayData.class.getName());
  }

  @Override
  public Expression withNewChildrenInternal(
      scala.collection.immutable.IndexedSeq<Expression> newChildren) {
    return new CloudEventsFromKafka(
        newChildren.apply(0), newChildren.apply(1), withDataJson, withData);
  }
}
