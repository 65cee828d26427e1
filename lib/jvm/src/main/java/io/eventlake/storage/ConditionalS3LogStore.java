package io.eventlake.storage;

import io.delta.storage.HadoopFileSystemLogStore;
import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Iterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSDataOutputStreamBuilder;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A Delta {@code LogStore} for S3 whose commits cannot overwrite each other: a commit file
 * ({@code _delta_log/<version>.json}, written without overwrite) is created with S3's
 * put-if-absent ({@code If-None-Match: *}, Hadoop 3.4's S3A option {@value #CONDITIONAL}),
 * so of two drivers on any hosts committing one version, one wins and the other gets
 * {@link java.nio.file.FileAlreadyExistsException}, which Delta answers by retrying its
 * commit at the next version. delta-rs commits the same way, so Spark and delta-rs writers
 * are safe with each other.
 *
 * <p>S3A retries a PUT that failed in flight, and a retried conditional PUT can meet its own
 * first attempt. Such a write is told from a lost race by what the object holds: when a
 * create fails and the object there has exactly the bytes of this write, it is this write
 * (a Delta commit holds its transaction's unique {@code txnId}); any other content is another
 * writer's commit.
 *
 * <p>Reading and listing are Hadoop's ({@link HadoopFileSystemLogStore}): S3 lists are
 * strongly consistent, so no cache of written files is needed. Spark picks it by
 * {@code spark.delta.logStore.s3a.impl}.
 */
public final class ConditionalS3LogStore extends HadoopFileSystemLogStore {
  /** S3A's create option for put-if-absent. */
  public static final String CONDITIONAL = "fs.option.create.conditional.overwrite";

  public ConditionalS3LogStore(Configuration hadoopConf) {
    super(hadoopConf);
  }

  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration conf)
      throws IOException {
    FileSystem fs = path.getFileSystem(conf);
    byte[] content = joined(actions);
    if (overwrite) {
      try (FSDataOutputStream out = fs.create(path, true)) {
        out.write(content);
      }
      return;
    }
    FSDataOutputStreamBuilder<?, ?> create = fs.createFile(path);
    create.overwrite(false);
    create.must(CONDITIONAL, true);
    try {
      try (FSDataOutputStream out = create.build()) {
        out.write(content);
      }
    } catch (IOException lost) {
      byte[] there = readIfThere(fs, path);
      if (there == null) {
        throw lost;
      }
      if (!Arrays.equals(there, content)) {
        java.nio.file.FileAlreadyExistsException taken =
            new java.nio.file.FileAlreadyExistsException(path.toString());
        taken.initCause(lost);
        throw taken;
      }
      // Our own retried PUT met its first attempt: the commit is in.
    }
  }

  @Override
  public Boolean isPartialWriteVisible(Path path, Configuration conf) {
    return false; // one PUT: the object is there whole or not at all
  }

  /** The actions as Delta writes a commit file: one JSON object a line. */
  static byte[] joined(Iterator<String> actions) {
    StringBuilder text = new StringBuilder();
    while (actions.hasNext()) {
      text.append(actions.next()).append('\n');
    }
    return text.toString().getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] readIfThere(FileSystem fs, Path path) throws IOException {
    try (InputStream in = fs.open(path)) {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      in.transferTo(bytes);
      return bytes.toByteArray();
    } catch (FileNotFoundException gone) {
      return null;
    }
  }
}
