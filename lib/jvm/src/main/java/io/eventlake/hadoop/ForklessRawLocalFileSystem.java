package io.eventlake.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system without a process per call. Without Hadoop's native library,
 * {@link RawLocalFileSystem} runs {@code chmod} for every permission it sets (each file
 * that {@code FileContext} creates, and its checksum file) and {@code readlink} for every
 * link status it reads (both sides of each {@code FileContext} rename): a fork of the
 * driver's JVM each, ~10 per streaming micro-batch between Spark's offset and commit logs
 * and Delta's commits, 60-75 ms per create-and-rename (docs/benchmarks.md). Here both are
 * Java's own calls; everything else, and any case they do not cover (a sticky bit, a
 * symbolic link), is Hadoop's.
 */
public class ForklessRawLocalFileSystem extends RawLocalFileSystem {

  @Override
  public void setPermission(Path path, FsPermission permission) throws IOException {
    if (permission.getStickyBit()) {
      super.setPermission(path, permission); // chmod's fourth digit: not in Java's set
      return;
    }
    Files.setPosixFilePermissions(pathToFile(path).toPath(), posix(permission));
  }

  @Override
  public FileStatus getFileLinkStatus(Path path) throws IOException {
    if (Files.isSymbolicLink(pathToFile(path).toPath())) {
      return super.getFileLinkStatus(path); // the target, qualified as Hadoop does it
    }
    // What Hadoop returns for a path that is no link: its status (or FileNotFoundException).
    return getFileStatus(path);
  }

  /** The permission as Java's set: user, group and others, as chmod's three digits. */
  static Set<PosixFilePermission> posix(FsPermission permission) {
    Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
    add(set, permission.getUserAction(), PosixFilePermission.OWNER_READ,
        PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE);
    add(set, permission.getGroupAction(), PosixFilePermission.GROUP_READ,
        PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE);
    add(set, permission.getOtherAction(), PosixFilePermission.OTHERS_READ,
        PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);
    return set;
  }

  private static void add(
      Set<PosixFilePermission> set,
      FsAction action,
      PosixFilePermission read,
      PosixFilePermission write,
      PosixFilePermission execute) {
    if (action.implies(FsAction.READ)) {
      set.add(read);
    }
    if (action.implies(FsAction.WRITE)) {
      set.add(write);
    }
    if (action.implies(FsAction.EXECUTE)) {
      set.add(execute);
    }
  }
}
