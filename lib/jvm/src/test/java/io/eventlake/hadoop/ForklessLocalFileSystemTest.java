package io.eventlake.hadoop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileNotFoundException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.Permission;
import java.util.EnumSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hadoop's local file system without forks: permissions and link statuses as Hadoop's own,
 * and a FileContext create-and-rename (Spark's checkpoints, Delta's log) that starts no
 * process. The last is checked by a security manager that refuses every exec.
 */
@SuppressWarnings("removal") // the security manager: the one hook on every exec of the JVM
class ForklessLocalFileSystemTest {
  @TempDir java.nio.file.Path folder;

  private ForklessRawLocalFileSystem raw;
  private SecurityManager before;

  /** Refuses what Hadoop's Shell does: start a process. */
  private static final class NoExec extends SecurityManager {
    @Override
    public void checkExec(String command) {
      throw new SecurityException("a process was started: " + command);
    }

    @Override
    public void checkPermission(Permission permission) {}

    @Override
    public void checkPermission(Permission permission, Object context) {}
  }

  @BeforeEach
  void setUp() throws Exception {
    raw = new ForklessRawLocalFileSystem();
    raw.initialize(java.net.URI.create("file:///"), new Configuration());
    before = System.getSecurityManager();
  }

  @AfterEach
  void tearDown() {
    System.setSecurityManager(before);
  }

  private Path file(String name) throws Exception {
    java.nio.file.Path path = folder.resolve(name);
    Files.writeString(path, "x");
    return new Path(path.toUri());
  }

  @Test
  void permissionsAreSetAsChmodSetsThem() throws Exception {
    Path path = file("a");
    System.setSecurityManager(new NoExec());
    for (String octal : new String[] {"640", "755", "600", "444", "777", "000", "123"}) {
      raw.setPermission(path, new FsPermission(Short.parseShort(octal, 8)));
      assertEquals(
          new FsPermission(Short.parseShort(octal, 8)).toString(),
          PosixFilePermissions.toString(Files.getPosixFilePermissions(folder.resolve("a"))),
          octal);
    }
  }

  @Test
  void aPathThatIsNoLinkHasItsOwnStatusAndAMissingOneIsNotFound() throws Exception {
    Path path = file("b");
    System.setSecurityManager(new NoExec());
    FileStatus status = raw.getFileLinkStatus(path);
    assertFalse(status.isSymlink());
    assertEquals(1, status.getLen());
    assertEquals(raw.getFileStatus(path).getPath(), status.getPath());
    assertThrows(
        FileNotFoundException.class,
        () -> raw.getFileLinkStatus(new Path(folder.resolve("missing").toUri())));
  }

  @Test
  void aSymbolicLinkIsStillSeenAsOne() throws Exception {
    Path target = file("c");
    java.nio.file.Path link = folder.resolve("link");
    Files.createSymbolicLink(link, folder.resolve("c"));
    // A plain path: Hadoop's own readlink of a file: URI's text finds no link either.
    FileStatus status = raw.getFileLinkStatus(new Path(link.toString()));
    assertTrue(status.isSymlink());
    assertEquals(target.toUri().getPath(), status.getSymlink().toUri().getPath());
  }

  @Test
  void aFileContextCreateAndRenameStartsNoProcess() throws Exception {
    Configuration conf = new Configuration();
    conf.set("fs.AbstractFileSystem.file.impl", ForklessLocalFs.class.getName());
    FileContext context = FileContext.getFileContext(java.net.URI.create("file:///"), conf);
    Path temporary = new Path(folder.resolve(".00001.json.tmp").toUri());
    Path committed = new Path(folder.resolve("00001.json").toUri());
    System.setSecurityManager(new NoExec());
    try (OutputStream out = context.create(temporary, EnumSet.of(CreateFlag.CREATE))) {
      out.write("{}".getBytes(StandardCharsets.UTF_8));
    }
    context.rename(temporary, committed, Options.Rename.NONE);
    System.setSecurityManager(before);
    assertEquals("{}", Files.readString(folder.resolve("00001.json")));
    assertTrue(Files.exists(folder.resolve(".00001.json.crc")), "the checksum file, as LocalFs");
    // Put-if-absent, as Delta's log store relies on: a second rename onto it is refused.
    Path again = new Path(folder.resolve(".again.tmp").toUri());
    try (OutputStream out = context.create(again, EnumSet.of(CreateFlag.CREATE))) {
      out.write("{}".getBytes(StandardCharsets.UTF_8));
    }
    assertThrows(
        org.apache.hadoop.fs.FileAlreadyExistsException.class,
        () -> context.rename(again, committed, Options.Rename.NONE));
  }
}
