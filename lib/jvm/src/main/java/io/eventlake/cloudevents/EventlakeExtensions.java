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
 * its own): {@code cloudevents_from_kafka(value, headers)}, usable from SQL and from
 * Python through {@code eventlake.binding}.
 */
public final class EventlakeExtensions implements Function1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    ExpressionInfo info =
        new ExpressionInfo(
            CloudEventsFromKafka.class.getName(),
            null,
            CloudEventsFromKafka.NAME,
            "_FUNC_(value, headers) - Decodes a Kafka record by the CloudEvents Kafka binding "
                + "into a struct of the event's attributes, data, extensions, content_mode, "
                + "reject_reason and reject_detail.",
            "",
            "",
            "",
            "misc_funcs",
            "0.1.0",
            "",
            "built-in");
    Function1<Seq<Expression>, Expression> builder =
        arguments -> {
          if (arguments.size() != 2) {
            throw new IllegalArgumentException(
                CloudEventsFromKafka.NAME + " takes 2 arguments (value, headers), got "
                    + arguments.size());
          }
          return new CloudEventsFromKafka(arguments.apply(0), arguments.apply(1));
        };
    extensions.injectFunction(
        new Tuple3<>(new FunctionIdentifier(CloudEventsFromKafka.NAME), info, builder));
    return BoxedUnit.UNIT;
  }
}
