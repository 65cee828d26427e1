package io.eventlake.ledger;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.delta.DeltaLog;
import org.apache.spark.sql.delta.DeltaOperations;
import org.apache.spark.sql.delta.OptimisticTransaction;
import org.apache.spark.sql.delta.actions.Action;
import org.apache.spark.sql.delta.actions.AddFile;
import org.apache.spark.sql.delta.actions.FileAction;
import org.apache.spark.sql.delta.actions.Metadata;
import org.apache.spark.sql.delta.actions.SetTransaction;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import scala.Option;
import scala.Tuple2;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * eventlake's ledger in a Delta table: per (job, topic, partition) the next Kafka offset
 * that has landed, kept as Delta {@code txn} actions (appId = the ledger key, version = the
 * offset) in the same commit as the rows that land it, as kafka-delta-ingest does.
 *
 * <p>{@link #write} writes a batch's data files without committing them; {@link #commit}
 * commits them together with the new marks. A commit is refused with {@link
 * LedgerMovedException} when any commit since the version the caller read its marks at
 * set one of the same keys (another process landed the same partitions); after the
 * transaction's own read version Delta's conflict check refuses it the same way (the keys
 * are registered as read). Marks are read by the caller (delta-rs or {@link #marks}).
 *
 * <p>Delta's transaction API is internal: this is the one class that uses it, and
 * eventlake.ledger checks the Delta version it was verified with.
 */
public final class DeltaLedger {
  private DeltaLedger() {}

  /** Data files written for one table, not yet committed. */
  public static final class Pending {
    private final OptimisticTransaction txn;
    private final Seq<FileAction> files;
    /** The table must have no data file when this commits ({@link #writeIntoEmpty}). */
    private final boolean intoEmpty;

    private Pending(OptimisticTransaction txn, Seq<FileAction> files, boolean intoEmpty) {
      this.txn = txn;
      this.files = files;
      this.intoEmpty = intoEmpty;
    }

    /** How many data files the commit will add. */
    public int files() {
      return files.size();
    }

    /** How many rows the commit will add (from the files' statistics). */
    public long rows() {
      long rows = 0;
      Iterator<FileAction> each = CollectionConverters.asJava(files.iterator());
      while (each.hasNext()) {
        if (each.next() instanceof AddFile add) {
          rows += (Long) add.numLogicalRecords().getOrElse(() -> 0L);
        }
      }
      return rows;
    }

    /** The table version the transaction started from. */
    public long readVersion() {
      return txn.readVersion();
    }
  }

  /** A table written with {@link #writeIntoEmpty} has data files now; nothing was committed. */
  public static final class TableNotEmptyException extends RuntimeException {
    public TableNotEmptyException(String message) {
      super(message);
    }
  }

  /** Another process moved one of the marks this commit sets; nothing was committed. */
  public static final class LedgerMovedException extends RuntimeException {
    public LedgerMovedException(String message) {
      super(message);
    }
  }

  /**
   * Start a transaction on the Delta table at {@code path} and write {@code rows} (null:
   * none) as its data files, uncommitted. The rows' columns must be the table's.
   */
  public static Pending write(SparkSession spark, String path, Dataset<Row> rows) {
    OptimisticTransaction txn = DeltaLog.forTable(spark, path).startTransaction();
    Seq<FileAction> files =
        rows == null
            ? CollectionConverters.asScala(new ArrayList<FileAction>()).toSeq()
            : txn.writeFiles(rows);
    return new Pending(txn, files, false);
  }

  /**
   * {@link #write} for a table that must have no data file when the commit lands (a state
   * table's first rows, written instead of merged), and had none at version {@code
   * emptyAt} (the caller read that from the log): null when a commit since added files.
   * The whole table counts as read, so a commit by another process adding files in
   * between makes Delta refuse this one (its {@code ConcurrentAppendException}). The
   * commits since {@code emptyAt} are read, not the snapshot's state: computing that
   * costs a Spark job (~1.7 s in a fresh driver).
   */
  public static Pending writeIntoEmpty(
      SparkSession spark, String path, Dataset<Row> rows, long emptyAt) {
    OptimisticTransaction txn = DeltaLog.forTable(spark, path).startTransaction();
    if (addedFilesSince(txn, emptyAt) != null) {
      return null;
    }
    txn.readWholeTable();
    return new Pending(txn, txn.writeFiles(rows), true);
  }

  /** The first commit after {@code version}, up to the transaction's, that adds a data file. */
  private static Long addedFilesSince(OptimisticTransaction txn, long version) {
    if (version >= txn.readVersion()) {
      return null;
    }
    Iterator<Tuple2<Object, scala.collection.immutable.Seq<Action>>> changes =
        CollectionConverters.asJava(txn.deltaLog().getChanges(version + 1, Option.empty(), false));
    while (changes.hasNext()) {
      Tuple2<Object, scala.collection.immutable.Seq<Action>> change = changes.next();
      long at = (Long) change._1();
      if (at > txn.readVersion()) {
        break;
      }
      Iterator<Action> actions = CollectionConverters.asJava(change._2().iterator());
      while (actions.hasNext()) {
        if (actions.next() instanceof AddFile) {
          return at;
        }
      }
    }
    return null;
  }

  /**
   * {@code pending}'s files in a new transaction on the table's latest version, for a
   * commit that lost to a change of the table's metadata (Delta's {@code
   * MetadataChangedException}: nothing of it was committed), when that change cannot make
   * the files wrong: table properties set or unset (CHECK constraints aside), plain
   * nullable columns added (a file without a column reads it as null). Null otherwise: a
   * column the files were written with removed or changed (type, nullability, metadata),
   * an added column that is required or computed, a CHECK constraint added or changed
   * (the files were not checked against it), other partition columns.
   */
  public static Pending renewed(Pending pending) {
    OptimisticTransaction txn = pending.txn.deltaLog().startTransaction();
    Metadata before = pending.txn.metadata();
    Metadata now = txn.metadata();
    if (!before.partitionColumns().equals(now.partitionColumns())) {
      return null;
    }
    StructType written = before.schema();
    StructType current = now.schema();
    for (StructField field : written.fields()) {
      Option<Object> index = current.getFieldIndex(field.name());
      if (index.isEmpty() || !current.fields()[(Integer) index.get()].equals(field)) {
        return null;
      }
    }
    for (StructField field : current.fields()) {
      boolean added = written.getFieldIndex(field.name()).isEmpty();
      if (added && (!field.nullable()
          || !field.metadata().equals(org.apache.spark.sql.types.Metadata.empty()))) {
        return null;
      }
    }
    Map<String, String> beforeConfig = CollectionConverters.asJava(before.configuration());
    Map<String, String> nowConfig = CollectionConverters.asJava(now.configuration());
    for (Map.Entry<String, String> property : nowConfig.entrySet()) {
      if (property.getKey().startsWith(CONSTRAINT_PREFIX)
          && !property.getValue().equals(beforeConfig.get(property.getKey()))) {
        return null;
      }
    }
    if (pending.intoEmpty) {
      Long added = addedFilesSince(txn, pending.txn.readVersion());
      if (added != null) {
        throw new TableNotEmptyException(
            txn.deltaLog().dataPath() + " has data files since version " + added);
      }
      txn.readWholeTable();
    }
    return new Pending(txn, pending.files, pending.intoEmpty);
  }

  /** Table properties that hold Delta's CHECK constraints. */
  private static final String CONSTRAINT_PREFIX = "delta.constraints.";

  /**
   * Commit {@code pending}'s files with {@code marks} (ledger key to next offset), unless a
   * commit after {@code sinceVersion} set one of those keys (py4j hands small numbers over
   * as Integer). Returns the committed version.
   */
  public static long commit(
      Pending pending, Map<String, ? extends Number> marks, long sinceVersion, String note) {
    OptimisticTransaction txn = pending.txn;
    String moved = movedSince(txn, marks, sinceVersion);
    if (moved != null) {
      throw new LedgerMovedException(moved);
    }
    List<Action> actions = new ArrayList<>();
    Iterator<FileAction> files = CollectionConverters.asJava(pending.files.iterator());
    while (files.hasNext()) {
      actions.add(files.next());
    }
    long now = System.currentTimeMillis();
    for (Map.Entry<String, ? extends Number> mark : new TreeMap<>(marks).entrySet()) {
      // Registered as read: a concurrent commit that sets the same key makes Delta refuse
      // this one (ConcurrentTransactionException) instead of committing both.
      txn.readTxn().$plus$eq(mark.getKey());
      actions.add(
          new SetTransaction(
              mark.getKey(), mark.getValue().longValue(), Option.apply((Object) now)));
    }
    DeltaOperations.Write operation =
        new DeltaOperations.Write(
            SaveMode.Append,
            Option.empty(),
            Option.empty(),
            Option.apply(note),
            Option.empty(),
            Option.empty(),
            Option.empty(),
            Option.empty(),
            Option.empty());
    return txn.commit(CollectionConverters.asScala(actions).toSeq(), operation);
  }

  /** What moved one of {@code marks}' keys after {@code sinceVersion}, or null. */
  private static String movedSince(
      OptimisticTransaction txn, Map<String, ? extends Number> marks, long sinceVersion) {
    long readVersion = txn.readVersion();
    if (sinceVersion >= readVersion) {
      return null;
    }
    Iterator<Tuple2<Object, scala.collection.immutable.Seq<Action>>> changes =
        CollectionConverters.asJava(
            txn.deltaLog().getChanges(sinceVersion + 1, Option.empty(), false));
    while (changes.hasNext()) {
      Tuple2<Object, scala.collection.immutable.Seq<Action>> change = changes.next();
      long version = (Long) change._1();
      if (version > readVersion) {
        break;
      }
      Iterator<Action> actions = CollectionConverters.asJava(change._2().iterator());
      while (actions.hasNext()) {
        Action action = actions.next();
        if (action instanceof SetTransaction set && marks.containsKey(set.appId())) {
          return "version " + version + " of " + txn.deltaLog().dataPath() + " set "
              + set.appId() + " to " + set.version() + " after version " + sinceVersion;
        }
      }
    }
    return null;
  }

  /** Every ledger key with {@code prefix} and its mark, at the table's latest version. */
  public static Map<String, Long> marks(SparkSession spark, String path, String prefix) {
    Map<String, Long> found = new TreeMap<>();
    scala.collection.Iterator<SetTransaction> all =
        DeltaLog.forTable(spark, path).update(false, Option.empty(), Option.empty())
            .setTransactions().iterator();
    while (all.hasNext()) {
      SetTransaction set = all.next();
      if (set.appId().startsWith(prefix)) {
        found.put(set.appId(), set.version());
      }
    }
    return found;
  }
}
