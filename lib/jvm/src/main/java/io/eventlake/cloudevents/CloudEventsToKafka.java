package io.eventlake.cloudevents;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code cloudevents_to_kafka(event, value, headers, mode[, key_attribute[, hop]])}: the
 * sender side of the Kafka binding as a Catalyst expression, the inverse of {@link
 * CloudEventsFromKafka}. {@code event} is a struct of the decoder's fields (see {@link
 * #EVENT_FIELDS}; extra fields are ignored), {@code value} and {@code headers} the record
 * as read; {@code mode} ({@code binary}, {@code structured} or {@code keep}), {@code
 * key_attribute} (null: no Key Mapper) and {@code hop} (JSON text of a {@link
 * Hop}: header transforms and routing trail; null: none) are constants. With
 * a trail, the event struct also carries the record's place ({@link #PLACE_FIELDS}). The
 * result is a struct of the record to write: {@code value}, {@code headers} and {@code
 * key} (the Key Mapper's key, null when the event lacks the attribute). Every rule lives
 * in {@link KafkaEncoder}; this class only moves Spark's internal values in and out, as
 * the decoder's does.
 *
 * <p>Generated code calls {@link #encode} once per record, for the reason given on {@link
 * CloudEventsFromKafka}: a {@code CodegenFallback} would keep the projection out of
 * whole-stage code generation.
 */
public final class CloudEventsToKafka extends KafkaRecordExpression {
  private static final long serialVersionUID = 1L;

  public static final String NAME = "cloudevents_to_kafka";

  /** The result type: what Spark's Kafka sink takes, minus topic and partition. */
  public static final StructType RESULT_TYPE =
      new StructType(
          new StructField[] {
            field("value", DataTypes.BinaryType),
            field("headers", HEADERS_TYPE),
            field("key", DataTypes.BinaryType),
          });

  /** The string attributes the event struct carries (time is read from the record). */
  private static final List<String> STRING_ATTRIBUTES =
      List.of("id", "source", "specversion", "type", "datacontenttype", "dataschema", "subject");

  /** The event struct's fields by name, with their types (the decoder's result's), in the
   * order {@link #toDecoded} reads them. */
  public static final Map<String, DataType> EVENT_FIELDS = eventFields();

  /** The event struct's fields that place the record, for a hop's trail entry. */
  public static final Map<String, DataType> PLACE_FIELDS = placeFields();

  private static Map<String, DataType> placeFields() {
    Map<String, DataType> fields = new LinkedHashMap<>();
    fields.put("kafka_topic", DataTypes.StringType);
    fields.put("kafka_partition", DataTypes.IntegerType);
    fields.put("kafka_offset", DataTypes.LongType);
    fields.put("kafka_timestamp", DataTypes.TimestampType);
    fields.put("hop_at", DataTypes.TimestampType);
    return java.util.Collections.unmodifiableMap(fields);
  }

  private static Map<String, DataType> eventFields() {
    Map<String, DataType> fields = new LinkedHashMap<>();
    for (String name : STRING_ATTRIBUTES) {
      fields.put(name, DataTypes.StringType);
    }
    fields.put("data", DataTypes.BinaryType);
    fields.put("data_is_json", DataTypes.BooleanType);
    fields.put("extensions",
        DataTypes.createMapType(DataTypes.StringType, DataTypes.StringType, true));
    fields.put("content_mode", DataTypes.StringType);
    fields.put("reject_reason", DataTypes.StringType);
    return java.util.Collections.unmodifiableMap(fields);
  }

  private final Expression event;
  private final Expression value;
  private final Expression headers;
  private final String mode;
  private final String keyAttribute;
  private final Hop hop;

  /** The session's time zone: the trail writes its timestamps there, as to_json would. */
  private final String zone;

  /** Ordinals of {@link #EVENT_FIELDS}, then {@link #PLACE_FIELDS} with a trail. */
  private transient int[] ordinals;

  private transient java.time.ZoneId zoneId;

  public CloudEventsToKafka(Expression event, Expression value, Expression headers, String mode,
      String keyAttribute, Hop hop, String zone) {
    super(NAME, 3, event, value, headers, Objects.requireNonNull(mode, "mode"), keyAttribute,
        Objects.requireNonNull(hop, "hop"), Objects.requireNonNull(zone, "zone"));
    this.event = event;
    this.value = value;
    this.headers = headers;
    this.mode = mode;
    this.keyAttribute = keyAttribute;
    this.hop = hop;
    this.zone = zone;
  }

  @Override
  public DataType dataType() {
    return RESULT_TYPE;
  }

  @Override
  public TypeCheckResult checkInputDataTypes() {
    String problem = eventProblem(event.dataType(), EVENT_FIELDS);
    if (problem == null && hop.hasTrail()) {
      problem = eventProblem(event.dataType(), PLACE_FIELDS);
    }
    if (!isValueType(value.dataType()) || !isHeadersType(headers.dataType())) {
      problem = "value (binary) and headers (array<struct<key:string,value:binary>>) as "
          + "read from Kafka; got " + value.dataType().simpleString() + " and "
          + headers.dataType().simpleString();
    }
    if (!KafkaEncoder.KEEP.equals(mode) && !KafkaBinding.BINARY.equals(mode)
        && !KafkaBinding.STRUCTURED.equals(mode)) {
      problem = "mode binary, structured or keep; got " + mode;
    }
    if (problem == null) {
      return TypeCheckResult.TypeCheckSuccess$.MODULE$;
    }
    return new TypeCheckResult.TypeCheckFailure(NAME + " takes " + problem);
  }

  /** What is wrong with the event struct's type; null when nothing is. */
  private static String eventProblem(DataType type, Map<String, DataType> fields) {
    if (!(type instanceof StructType struct)) {
      return "a struct of the decoder's fields as event; got " + type.simpleString();
    }
    for (Map.Entry<String, DataType> wanted : fields.entrySet()) {
      scala.Option<StructField> found = struct.getFieldIndex(wanted.getKey()).map(struct::apply);
      if (found.isEmpty() || !sameType(found.get().dataType(), wanted.getValue())) {
        return "an event struct with " + wanted.getKey() + " "
            + wanted.getValue().simpleString() + "; got " + type.simpleString();
      }
    }
    return null;
  }

  private static boolean sameType(DataType actual, DataType wanted) {
    if (actual instanceof MapType && wanted instanceof MapType) {
      return DataType.equalsIgnoreCaseAndNullability(actual, wanted);
    }
    return actual.equals(wanted);
  }

  private int[] ordinals() {
    if (ordinals == null) {
      StructType struct = (StructType) event.dataType();
      List<String> names = new java.util.ArrayList<>(EVENT_FIELDS.keySet());
      if (hop.hasTrail()) {
        names.addAll(PLACE_FIELDS.keySet());
      }
      int[] found = new int[names.size()];
      for (int i = 0; i < found.length; i++) {
        found[i] = struct.fieldIndex(names.get(i));
      }
      ordinals = found;
    }
    return ordinals;
  }

  @Override
  public Object eval(InternalRow row) {
    return encode((InternalRow) event.eval(row), (byte[]) value.eval(row),
        (ArrayData) headers.eval(row));
  }

  /**
   * One record encoded: the result row of {@link #RESULT_TYPE}. Called by {@link #eval}
   * and by generated code; a null event (no decoder result) copies the record.
   */
  public InternalRow encode(InternalRow eventRow, byte[] valueBytes, ArrayData headerArray) {
    Headers read = Headers.of(headerArray);
    KafkaEncoder.Encoded encoded = KafkaEncoder.encode(toDecoded(eventRow), valueBytes,
        read.keys(), read.values(), read.count(), mode, keyAttribute, hop,
        hop.hasTrail() ? place(eventRow) : null);
    Object[] headerRows = new Object[encoded.headerKeys.size()];
    for (int i = 0; i < headerRows.length; i++) {
      headerRows[i] = new GenericInternalRow(new Object[] {
        UTF8String.fromString(encoded.headerKeys.get(i)), encoded.headerValues.get(i)});
    }
    return new GenericInternalRow(
        new Object[] {encoded.value, new GenericArrayData(headerRows), encoded.key});
  }

  /** Where the record was read and when the hop runs, from the event struct. */
  private KafkaEncoder.Place place(InternalRow row) {
    int[] at = ordinals();
    int first = EVENT_FIELDS.size();
    if (zoneId == null) {
      zoneId = java.time.ZoneId.of(zone);
    }
    return new KafkaEncoder.Place(
        row.isNullAt(at[first]) ? null : row.getUTF8String(at[first]).toString(),
        row.isNullAt(at[first + 1]) ? null : row.getInt(at[first + 1]),
        row.isNullAt(at[first + 2]) ? null : row.getLong(at[first + 2]),
        row.isNullAt(at[first + 3]) ? null : row.getLong(at[first + 3]),
        row.isNullAt(at[first + 4]) ? null : row.getLong(at[first + 4]),
        zoneId);
  }

  /** The decoder's fields back in its own shape, as {@link KafkaEncoder} takes them. */
  private KafkaBinding.Decoded toDecoded(InternalRow row) {
    KafkaBinding.Decoded decoded = new KafkaBinding.Decoded();
    if (row == null) {
      decoded.reason = "no event";
      return decoded;
    }
    int[] at = ordinals();
    for (int i = 0; i < STRING_ATTRIBUTES.size(); i++) {
      if (!row.isNullAt(at[i])) {
        decoded.attributes.put(STRING_ATTRIBUTES.get(i), row.getUTF8String(at[i]).toString());
      }
    }
    decoded.data = row.isNullAt(at[7]) ? null : row.getBinary(at[7]);
    decoded.dataIsJson = !row.isNullAt(at[8]) && row.getBoolean(at[8]);
    if (!row.isNullAt(at[9])) {
      MapData map = row.getMap(at[9]);
      ArrayData names = map.keyArray();
      ArrayData texts = map.valueArray();
      decoded.extensions = new LinkedHashMap<>();
      for (int i = 0; i < map.numElements(); i++) {
        decoded.extensions.put(names.getUTF8String(i).toString(),
            texts.isNullAt(i) ? null : texts.getUTF8String(i).toString());
      }
    }
    decoded.contentMode = row.isNullAt(at[10]) ? null : row.getUTF8String(at[10]).toString();
    decoded.reason = row.isNullAt(at[11]) ? null : row.getUTF8String(at[11]).toString();
    return decoded;
  }

  @Override
  public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
    return callPerRecord(ctx, ev, "cloudEventsToKafka", "encode",
        InternalRow.class.getName(), "byte[]", ArrayData.class.getName());
  }

  @Override
  public Expression withNewChildrenInternal(
      scala.collection.immutable.IndexedSeq<Expression> newChildren) {
    return new CloudEventsToKafka(newChildren.apply(0), newChildren.apply(1),
        newChildren.apply(2), mode, keyAttribute, hop, zone);
  }
}
