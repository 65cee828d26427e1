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
import org.apache.spark.sql.delta.actions.RemoveFile;
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
 * commits them together with the new marks. {@link #writeIntoEmpty} and {@link #rewrite}
 * write rows computed from the table's files at a version (a state table's first rows,
 * its changed files): their commit is refused with {@link FilesChangedException} when
 * another commit added or removed data files since. A commit is refused with {@link
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
    /**
     * The rows were computed from the table's files at the transaction's read version
     * ({@link #writeIntoEmpty}, {@link #rewrite}): no other commit may add or remove files.
     */
    private final boolean readsFiles;

    private Pending(OptimisticTransaction txn, Seq<FileAction> files, boolean readsFiles) {
      this.txn = txn;
      this.files = files;
      this.readsFiles = readsFiles;
    }

    /** How many data files the commit will add. */
    public int files() {
      return files.size();
    }

    /** How many rows the commit's data files hold (their statistics; removed files aside). */
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

  /**
   * Another commit added or removed data files of a table since the version the rows of a
   * {@link #writeIntoEmpty} or {@link #rewrite} were computed from; nothing was committed.
   */
  public static final class FilesChangedException extends RuntimeException {
    public FilesChangedException(String message) {
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
   * between makes Delta refuse this one (its {@code ConcurrentAppendException}).
   */
  public static Pending writeIntoEmpty(
      SparkSession spark, String path, Dataset<Row> rows, long emptyAt) {
    OptimisticTransaction txn = readingFilesOf(spark, path, emptyAt);
    return txn == null ? null : new Pending(txn, txn.writeFiles(rows), true);
  }

  /**
   * {@link #write} of rows computed from the table's data files at version {@code readAt}
   * (the caller listed them from the log), replacing the files {@code removed} (paths as the
   * log has them, and their sizes) in the same commit: a copy-on-write of the files a state
   * batch changes, without Delta's MERGE. {@code rows} has the table's columns and
   * Delta's {@code _change_type}: null for the table's rows, the change's type for Change
   * Data Feed rows, which Delta writes under {@code _change_data}. Null when a commit since
   * {@code readAt} added or removed files; the whole table counts as read, so Delta
   * refuses the commit when another one does meanwhile.
   */
  public static Pending rewrite(
      SparkSession spark,
      String path,
      Dataset<Row> rows,
      long readAt,
      List<String> removed,
      List<? extends Number> sizes) {
    OptimisticTransaction txn = readingFilesOf(spark, path, readAt);
    if (txn == null) {
      return null;
    }
    List<FileAction> files = new ArrayList<>(CollectionConverters.asJava(txn.writeFiles(rows)));
    long now = System.currentTimeMillis();
    scala.collection.immutable.Map<String, String> none = scala.collection.immutable.Map$.MODULE$.empty();
    for (int i = 0; i < removed.size(); i++) {
      files.add(
          new RemoveFile(
              removed.get(i),
              Option.apply((Object) now),
              true,
              Option.apply((Object) true),
              none,
              Option.apply((Object) sizes.get(i).longValue()),
              null,
              null,
              Option.empty(),
              Option.empty(),
              null,
              Option.empty()));
    }
    return new Pending(txn, CollectionConverters.asScala(files).toSeq(), true);
  }

  /**
   * A transaction on the table's latest version that registers the whole table as read,
   * or null when a commit after {@code version} added or removed data files. The commits
   * since are read, not the snapshot's state: computing that costs a Spark job (~1.7 s in
   * a fresh driver).
   */
  private static OptimisticTransaction readingFilesOf(SparkSession spark, String path, long version) {
    OptimisticTransaction txn = DeltaLog.forTable(spark, path).startTransaction();
    if (firstChange(txn, version, DeltaLedger::changesFiles) != null) {
      return null;
    }
    txn.readWholeTable();
    return txn;
  }

  private static boolean changesFiles(Action action) {
    return action instanceof AddFile || action instanceof RemoveFile;
  }

  /**
   * The first action after {@code version}, up to the transaction's read version, that
   * {@code matches}, described with its version (null: none).
   */
  private static String firstChange(
      OptimisticTransaction txn, long version, java.util.function.Predicate<Action> matches) {
    long readVersion = txn.readVersion();
    if (version >= readVersion) {
      return null;
    }
    Iterator<Tuple2<Object, scala.collection.immutable.Seq<Action>>> changes =
        CollectionConverters.asJava(txn.deltaLog().getChanges(version + 1, Option.empty(), false));
    while (changes.hasNext()) {
      Tuple2<Object, scala.collection.immutable.Seq<Action>> change = changes.next();
      long at = (Long) change._1();
      if (at > readVersion) {
        break;
      }
      Iterator<Action> actions = CollectionConverters.asJava(change._2().iterator());
      while (actions.hasNext()) {
        Action action = actions.next();
        if (matches.test(action)) {
          return "version " + at + " of " + txn.deltaLog().dataPath() + ": " + action.json();
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
    if (pending.readsFiles) {
      String changed = firstChange(txn, pending.txn.readVersion(), DeltaLedger::changesFiles);
      if (changed != null) {
        throw new FilesChangedException("files changed at " + changed);
      }
      txn.readWholeTable();
    }
    return new Pending(txn, pending.files, pending.readsFiles);
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
    return firstChange(
        txn,
        sinceVersion,
        action -> action instanceof SetTransaction set && marks.containsKey(set.appId()));
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
