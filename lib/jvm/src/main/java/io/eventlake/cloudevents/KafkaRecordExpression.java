package io.eventlake.cloudevents;

import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeBlock;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.expressions.codegen.FalseLiteral$;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * What the binding's two Catalyst expressions, {@link CloudEventsFromKafka} and {@link
 * CloudEventsToKafka}, share: both take a Kafka record's {@code value} and {@code headers}
 * among their children, return a non-null struct and make one call per record into plain
 * Java code. This class holds their case-class surface ({@code productArity}, {@code
 * productElement}, {@code canEqual}, {@code equals}, {@code hashCode}), driven by the
 * array of their constructor's arguments, so that Spark's tree transformations copy and
 * compare them as they do its own expressions; and the helpers their type checks, record
 * reading and generated code have in common.
 *
 * <p>A subclass passes its SQL name and its constructor's arguments, children first, in
 * the constructor's order; it still declares {@code withNewChildrenInternal}.
 */
abstract class KafkaRecordExpression extends Expression implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  /** The Kafka source's {@code headers} column (with {@code includeHeaders=true}). */
  static final DataType HEADERS_TYPE =
      DataTypes.createArrayType(
          new StructType()
              .add("key", DataTypes.StringType)
              .add("value", DataTypes.BinaryType));

  private final String name;

  /** The constructor's arguments, in its order: the product's elements. */
  private final Object[] arguments;

  private final scala.collection.immutable.Seq<Expression> children;

  /**
   * An expression of the function {@code name} whose constructor took {@code arguments}.
   *
   * @param name the SQL function's name: {@link #prettyName} and the first value hashed
   * @param childCount how many of {@code arguments}, from the first, are the children
   * @param arguments the subclass constructor's arguments, in its order
   * @throws NullPointerException when a child is null
   */
  KafkaRecordExpression(String name, int childCount, Object... arguments) {
    this.name = name;
    this.arguments = arguments;
    this.children =
        seq(List.of(Arrays.copyOf(arguments, childCount, Expression[].class)));
  }

  /** A nullable field of a result or event struct. */
  static StructField field(String name, DataType type) {
    return new StructField(name, type, true, Metadata.empty());
  }

  /** True for the type of a record's {@code value} as read from Kafka (or a null). */
  static boolean isValueType(DataType type) {
    return type.equals(DataTypes.BinaryType) || type.equals(DataTypes.NullType);
  }

  /** True for the type of a record's {@code headers} as read from Kafka (or a null). */
  static boolean isHeadersType(DataType type) {
    return type instanceof ArrayType array
        && DataType.equalsIgnoreCaseAndNullability(array, HEADERS_TYPE)
        || type.equals(DataTypes.NullType);
  }

  /**
   * A record's headers as the binding takes them: keys (a header without key has {@code
   * ""}) and values (null for a header without value), in record order.
   */
  record Headers(String[] keys, byte[][] values) {
    /** The headers of {@code headerArray}, a {@link #HEADERS_TYPE} value (null: none). */
    static Headers of(ArrayData headerArray) {
      int count = headerArray == null ? 0 : headerArray.numElements();
      String[] keys = new String[count];
      byte[][] values = new byte[count][];
      for (int i = 0; i < count; i++) {
        InternalRow header = headerArray.getStruct(i, 2);
        keys[i] = header.isNullAt(0) ? "" : header.getUTF8String(0).toString();
        values[i] = header.isNullAt(1) ? null : header.getBinary(1);
      }
      return new Headers(keys, values);
    }

    /** How many headers there are. */
    int count() {
      return keys.length;
    }
  }

  /**
   * Generated code that evaluates the children in place, then calls {@code method} of this
   * object once, with each child's value (null when it is null) as an argument of the Java
   * type at its index in {@code javaTypes}: its result, an {@link InternalRow}, is {@code
   * ev}'s value, never null.
   *
   * @param reference the name the generated code gives this object
   */
  ExprCode callPerRecord(CodegenContext ctx, ExprCode ev, String reference, String method,
      String... javaTypes) {
    String self = ctx.addReferenceObj(reference, this, getClass().getName());
    ExprCode[] codes = new ExprCode[javaTypes.length];
    StringBuilder code = new StringBuilder();
    for (int i = 0; i < codes.length; i++) {
      codes[i] = children.apply(i).genCode(ctx);
      code.append(codes[i].code()).append("\n");
    }
    code.append("final ").append(InternalRow.class.getName()).append(" ").append(ev.value())
        .append(" = ").append(self).append(".").append(method).append("(");
    for (int i = 0; i < codes.length; i++) {
      code.append(i == 0 ? "" : ", ").append(argument(children.apply(i), codes[i], javaTypes[i]));
    }
    code.append(");");
    return ev.copy(
        new CodeBlock(seq(List.of(code.toString())), seq(List.<JavaCode>of())),
        FalseLiteral$.MODULE$,
        ev.value());
  }

  /** A child's generated value as a call's argument (null when it is null). */
  private static String argument(Expression child, ExprCode code, String javaType) {
    if (child.dataType().equals(DataTypes.NullType)) {
      return "(" + javaType + ") null";
    }
    return "(" + code.isNull() + " ? null : " + code.value() + ")";
  }

  /** {@code items} as the immutable Scala sequence Catalyst's APIs take. */
  private static <T> scala.collection.immutable.Seq<T> seq(List<T> items) {
    return scala.jdk.javaapi.CollectionConverters.asScala(items).toList();
  }

  /** The first {@code childCount} constructor arguments. */
  @Override
  public scala.collection.immutable.Seq<Expression> children() {
    return children;
  }

  /** Never: a record always gets a result row. */
  @Override
  public boolean nullable() {
    return false;
  }

  /** The SQL function's name. */
  @Override
  public String prettyName() {
    return name;
  }

  /** How many arguments the constructor took. */
  @Override
  public int productArity() {
    return arguments.length;
  }

  /** The constructor's argument {@code n}, as {@code makeCopy} passes it back. */
  @Override
  public Object productElement(int n) {
    if (n < 0 || n >= arguments.length) {
      throw new IndexOutOfBoundsException(n);
    }
    return arguments[n];
  }

  /** True for an expression of this very class (each subclass is final). */
  @Override
  public boolean canEqual(Object other) {
    return other != null && other.getClass() == getClass();
  }

  /** The same class with equal constructor arguments. */
  @Override
  public boolean equals(Object other) {
    return canEqual(other)
        && Arrays.equals(arguments, ((KafkaRecordExpression) other).arguments);
  }

  /** {@code Objects.hash} of the name, then the constructor's arguments. */
  @Override
  public int hashCode() {
    int hash = 31 + name.hashCode();
    for (Object argument : arguments) {
      hash = 31 * hash + java.util.Objects.hashCode(argument);
    }
    return hash;
  }
}
