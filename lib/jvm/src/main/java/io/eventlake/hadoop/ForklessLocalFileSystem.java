package io.eventlake.hadoop;

import org.apache.hadoop.fs.LocalFileSystem;

/**
 * {@code file:} for Hadoop's {@code FileSystem} API ({@code fs.file.impl}): Hadoop's
 * {@link LocalFileSystem} (checksum files included) over {@link ForklessRawLocalFileSystem}.
 */
public class ForklessLocalFileSystem extends LocalFileSystem {
  public ForklessLocalFileSystem() {
    super(new ForklessRawLocalFileSystem());
  }
}
