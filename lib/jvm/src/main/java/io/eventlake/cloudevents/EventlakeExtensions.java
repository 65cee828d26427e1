package io.eventlake.cloudevents;

import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import scala.Function1;
import scala.Tuple3;
import scala.collection.immutable.Seq;
import scala.runtime.BoxedUnit;

/**
 * Registers eventlake's SQL functions in every session built with {@code
 * spark.sql.extensions=io.eventlake.cloudevents.EventlakeExtensions} (as Delta registers
 * its own): {@code cloudevents_from_kafka(value, headers[, data_json[, data]])} (the decoder, used
 * from Python through {@code eventlake.binding}) and {@code cloudevents_to_kafka(event,
 * value, headers, mode[, key_attribute[, hop]])} (the encoder, through {@code
 * eventlake.binding.encode}).
 */
public final class EventlakeExtensions implements Function1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    register(extensions, CloudEventsFromKafka.class, CloudEventsFromKafka.NAME,
        "_FUNC_(value, headers[, data_json[, data]]) - Decodes a Kafka record by the "
            + "CloudEvents Kafka binding into a struct of the event's attributes, data (null "
            + "when the constant data is false: checked, not kept), data_json (the JSON data "
            + "as a VARIANT; not built when the constant data_json or data is false), "
            + "extensions, content_mode, reject_reason and reject_detail.",
        EventlakeExtensions::decoder);
    register(extensions, CloudEventsToKafka.class, CloudEventsToKafka.NAME,
        "_FUNC_(event, value, headers, mode[, key_attribute[, hop]]) - Encodes a decoded "
            + "event back into a Kafka record by the CloudEvents Kafka binding, in mode "
            + "'binary', 'structured' or 'keep', with the Key Mapper's key when key_attribute "
            + "is given and a republish hop's header transforms and routing trail when hop "
            + "(JSON) is: a struct of value, headers and key.",
        EventlakeExtensions::encoder);
    return BoxedUnit.UNIT;
  }

  /**
   * Registers one SQL function {@code name}, implemented by {@code type}, documented by
   * {@code usage} (as {@code DESCRIBE FUNCTION} shows it: group {@code misc_funcs}, since
   * 0.1.0) and built from its arguments by {@code builder}.
   */
  private static void register(SparkSessionExtensions extensions, Class<? extends Expression> type,
      String name, String usage, Function1<Seq<Expression>, Expression> builder) {
    ExpressionInfo info =
        new ExpressionInfo(
            type.getName(),
            null,
            name,
            usage,
            "",
            "",
            "",
            "misc_funcs",
            "0.1.0",
            "",
            "built-in");
    extensions.injectFunction(new Tuple3<>(new FunctionIdentifier(name), info, builder));
  }

  /** {@code cloudevents_from_kafka}'s builder: data_json and data must be constants. */
  private static Expression decoder(Seq<Expression> arguments) {
    if (arguments.size() < 2 || arguments.size() > 4) {
      throw new IllegalArgumentException(
          CloudEventsFromKafka.NAME + " takes 2 to 4 arguments (value, headers"
              + "[, data_json[, data]]), got " + arguments.size());
    }
    return new CloudEventsFromKafka(arguments.apply(0), arguments.apply(1),
        arguments.size() < 3 || constantFlag(arguments.apply(2), "data_json"),
        arguments.size() < 4 || constantFlag(arguments.apply(3), "data"));
  }

  /** {@code cloudevents_to_kafka}'s builder: mode and key_attribute must be constants. */
  private static Expression encoder(Seq<Expression> arguments) {
    if (arguments.size() < 4 || arguments.size() > 6) {
      throw new IllegalArgumentException(
          CloudEventsToKafka.NAME + " takes 4 to 6 arguments (event, value, headers, mode"
              + "[, key_attribute[, hop]]), got " + arguments.size());
    }
    String mode = constantText(arguments.apply(3), "mode");
    if (mode == null) {
      throw new IllegalArgumentException(CloudEventsToKafka.NAME + ": mode must not be null");
    }
    String keyAttribute = arguments.size() >= 5 ? constantText(arguments.apply(4), "key_attribute")
        : null;
    String hop = arguments.size() == 6 ? constantText(arguments.apply(5), "hop") : null;
    return new CloudEventsToKafka(
        arguments.apply(0), arguments.apply(1), arguments.apply(2), mode, keyAttribute,
        hop == null ? Hop.NONE : Hop.fromJson(hop),
        org.apache.spark.sql.internal.SQLConf.get().sessionLocalTimeZone());
  }

  private static boolean constantFlag(Expression argument, String name) {
    Object flag = argument.foldable() ? argument.eval(null) : null;
    if (!(flag instanceof Boolean bool)) {
      throw new IllegalArgumentException(
          CloudEventsFromKafka.NAME + ": " + name + " must be a constant true or false");
    }
    return bool;
  }

  private static String constantText(Expression argument, String name) {
    if (!argument.foldable()) {
      throw new IllegalArgumentException(
          CloudEventsToKafka.NAME + ": " + name + " must be a constant string");
    }
    Object text = argument.eval(null);
    return text == null ? null : text.toString();
  }
}
