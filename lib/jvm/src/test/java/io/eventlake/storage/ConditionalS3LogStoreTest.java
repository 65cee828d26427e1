package io.eventlake.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.delta.storage.CloseableIterator;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Delta's contract for a LogStore (the cases of delta-io/delta's LogStoreSuiteBase: read and
 * write, detects conflict, listFrom, overwrite) held against {@link ConditionalS3LogStore} on
 * the local S3 server (s3proxy from infra/jars/s3server, started here on 127.0.0.1), and two
 * writers racing for many versions: each version is won exactly once.
 */
class ConditionalS3LogStoreTest {
  private static final String BUCKET = "logstore";
  private static Process server;
  private static Configuration conf;
  private static java.nio.file.Path home;

  private Path log;

  @BeforeAll
  static void startServer() throws Exception {
    java.nio.file.Path jars = java.nio.file.Path.of("../../infra/jars/s3server");
    if (!Files.isDirectory(jars)) {
      throw new IllegalStateException("The S3 server's jars are missing: run `make jars`.");
    }
    home = Files.createTempDirectory("eventlake-logstore-s3");
    int port;
    try (ServerSocket socket = new ServerSocket(0)) {
      port = socket.getLocalPort();
    }
    String identity = "logstore" + UUID.randomUUID().toString().substring(0, 8);
    String credential = UUID.randomUUID().toString();
    java.nio.file.Path properties = home.resolve("s3proxy.properties");
    Files.writeString(
        properties,
        String.join(
            "\n",
            "s3proxy.endpoint=http://127.0.0.1:" + port,
            "s3proxy.authorization=aws-v2-or-v4",
            "s3proxy.identity=" + identity,
            "s3proxy.credential=" + credential,
            "jclouds.provider=filesystem-nio2",
            "jclouds.filesystem.basedir=" + home.resolve("data"),
            ""));
    Files.createDirectories(home.resolve("data"));
    String java = System.getProperty("java.home") + "/bin/java";
    server =
        new ProcessBuilder(
                java, "-Xmx256m", "-cp", jars.toAbsolutePath() + "/*",
                "org.gaul.s3proxy.Main", "--properties", properties.toString())
            .redirectErrorStream(true)
            .redirectOutput(home.resolve("server.log").toFile())
            .start();
    String endpoint = "http://127.0.0.1:" + port;
    waitUntilAnswering(endpoint);
    try (S3Client client =
        S3Client.builder()
            .endpointOverride(URI.create(endpoint))
            .region(Region.US_EAST_1)
            .forcePathStyle(true)
            .credentialsProvider(
                StaticCredentialsProvider.create(AwsBasicCredentials.create(identity, credential)))
            .build()) {
      client.createBucket(b -> b.bucket(BUCKET));
    }
    conf = new Configuration();
    conf.set("fs.s3a.endpoint", endpoint);
    conf.set("fs.s3a.endpoint.region", "us-east-1");
    conf.set("fs.s3a.path.style.access", "true");
    conf.set("fs.s3a.connection.ssl.enabled", "false");
    conf.set("fs.s3a.access.key", identity);
    conf.set("fs.s3a.secret.key", credential);
    conf.set("fs.s3a.create.conditional.enabled", "true");
  }

  private static void waitUntilAnswering(String endpoint) throws Exception {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (System.nanoTime() < deadline) {
      if (!server.isAlive()) {
        throw new IllegalStateException("The S3 server exited; see " + home + "/server.log");
      }
      try {
        http.send(HttpRequest.newBuilder(URI.create(endpoint + "/")).build(),
            HttpResponse.BodyHandlers.discarding());
        return;
      } catch (IOException notYet) {
        Thread.sleep(100);
      }
    }
    throw new IllegalStateException("The S3 server did not answer within 60 s");
  }

  @AfterAll
  static void stopServer() throws Exception {
    FileSystem.closeAll();
    if (server != null) {
      server.destroy();
      server.waitFor();
    }
  }

  @BeforeEach
  void freshLog() {
    log = new Path("s3a://" + BUCKET + "/" + UUID.randomUUID() + "/_delta_log");
  }

  private static Path version(Path log, long number) {
    return new Path(log, String.format("%020d.json", number));
  }

  private static List<String> read(ConditionalS3LogStore store, Path path) throws IOException {
    List<String> lines = new ArrayList<>();
    try (CloseableIterator<String> it = store.read(path, conf)) {
      it.forEachRemaining(lines::add);
    }
    return lines;
  }

  @Test
  void aCommitWrittenIsReadBackLineByLine() throws Exception {
    ConditionalS3LogStore store = new ConditionalS3LogStore(conf);
    store.write(version(log, 0), List.of("zero", "none").iterator(), false, conf);
    store.write(version(log, 1), List.of("one").iterator(), false, conf);
    assertEquals(List.of("zero", "none"), read(store, version(log, 0)));
    assertEquals(List.of("one"), read(store, version(log, 1)));
  }

  @Test
  void aSecondCommitOfOneVersionIsRefusedAndLeavesTheFirst() throws Exception {
    ConditionalS3LogStore store = new ConditionalS3LogStore(conf);
    store.write(version(log, 0), List.of("first").iterator(), false, conf);
    assertThrows(
        FileAlreadyExistsException.class,
        () -> store.write(version(log, 0), List.of("second").iterator(), false, conf));
    assertEquals(List.of("first"), read(store, version(log, 0)));
  }

  @Test
  void aRetriedWriteOfTheSameCommitCountsAsWritten() throws Exception {
    ConditionalS3LogStore store = new ConditionalS3LogStore(conf);
    List<String> commit = List.of("{\"commitInfo\":{\"txnId\":\"" + UUID.randomUUID() + "\"}}");
    store.write(version(log, 0), commit.iterator(), false, conf);
    store.write(version(log, 0), commit.iterator(), false, conf);
    assertEquals(commit, read(store, version(log, 0)));
  }

  @Test
  void anOverwriteReplacesTheFile() throws Exception {
    ConditionalS3LogStore store = new ConditionalS3LogStore(conf);
    Path last = new Path(log, "_last_checkpoint");
    store.write(last, List.of("{\"version\":10}").iterator(), true, conf);
    store.write(last, List.of("{\"version\":20}").iterator(), true, conf);
    assertEquals(List.of("{\"version\":20}"), read(store, last));
  }

  @Test
  void listFromListsTheFilesFromTheOneGivenInOrder() throws Exception {
    ConditionalS3LogStore store = new ConditionalS3LogStore(conf);
    for (long number : new long[] {0, 1, 2, 10}) {
      store.write(version(log, number), List.of("v" + number).iterator(), false, conf);
    }
    List<String> names = new ArrayList<>();
    Iterator<FileStatus> listed = store.listFrom(version(log, 1), conf);
    listed.forEachRemaining(status -> names.add(status.getPath().getName()));
    assertEquals(
        List.of(
            "00000000000000000001.json", "00000000000000000002.json",
            "00000000000000000010.json"),
        names);
  }

  @Test
  void partialWritesAreNeverVisible() {
    assertFalse(new ConditionalS3LogStore(conf).isPartialWriteVisible(version(log, 0), conf));
  }

  @Test
  void twoWritersRacingForEachOfManyVersionsEachVersionIsWonOnce() throws Exception {
    int versions = 100;
    ConcurrentHashMap<Long, String> winners = new ConcurrentHashMap<>();
    AtomicInteger lost = new AtomicInteger();
    CyclicBarrier together = new CyclicBarrier(2);
    List<Thread> writers = new ArrayList<>();
    for (String writer : List.of("a", "b")) {
      Configuration own = new Configuration(conf);
      ConditionalS3LogStore store = new ConditionalS3LogStore(own);
      writers.add(
          new Thread(
              () -> {
                for (long number = 0; number < versions; number++) {
                  try {
                    together.await(30, TimeUnit.SECONDS);
                    store.write(
                        version(log, number), List.of(writer + number).iterator(), false, own);
                    String previous = winners.putIfAbsent(number, writer);
                    if (previous != null) {
                      throw new AssertionError("version " + number + " won twice");
                    }
                  } catch (FileAlreadyExistsException taken) {
                    lost.incrementAndGet();
                  } catch (IOException error) {
                    throw new UncheckedIOException(error);
                  } catch (Exception error) {
                    throw new IllegalStateException(error);
                  } catch (AssertionError twice) {
                    together.reset(); // the other writer stops too, instead of waiting
                    throw twice;
                  }
                }
              }));
    }
    List<Throwable> failures = new ArrayList<>();
    for (Thread thread : writers) {
      thread.setUncaughtExceptionHandler((t, error) -> failures.add(error));
      thread.start();
    }
    for (Thread thread : writers) {
      thread.join();
    }
    assertTrue(failures.isEmpty(), () -> "writers failed: " + failures);
    assertEquals(versions, winners.size());
    assertEquals(versions, lost.get());
    ConditionalS3LogStore reader = new ConditionalS3LogStore(conf);
    for (long number = 0; number < versions; number++) {
      assertEquals(List.of(winners.get(number) + number), read(reader, version(log, number)));
    }
  }

  @Test
  void joinedIsOneActionALine() {
    assertArrayEquals(
        "a\nb\n".getBytes(StandardCharsets.UTF_8),
        ConditionalS3LogStore.joined(List.of("a", "b").iterator()));
  }
}
