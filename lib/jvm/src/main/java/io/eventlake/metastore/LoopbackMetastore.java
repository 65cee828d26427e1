package io.eventlake.metastore;

import java.net.InetSocketAddress;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransportFactory;

/**
 * A Hive Metastore (Thrift) service on one address only: the Hive 2.3 metastore that
 * Spark bundles binds every interface ({@code HiveMetaStore -p}), and eventlake's local
 * servers listen on 127.0.0.1 unless asked. The handler is Hive's own; its database and
 * warehouse come from the {@code hive-site.xml} on the class path.
 *
 * <p>Usage: {@code java -cp <conf>:<pyspark jars>/*:<eventlake jar>
 * io.eventlake.metastore.LoopbackMetastore 127.0.0.1 9083}
 */
public final class LoopbackMetastore {
  private LoopbackMetastore() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: LoopbackMetastore <host> <port>");
      System.exit(2);
    }
    String host = args[0];
    int port = Integer.parseInt(args[1]);
    HiveConf conf = new HiveConf(HiveMetaStore.HMSHandler.class);
    HiveMetaStore.HMSHandler base = new HiveMetaStore.HMSHandler("eventlake metastore", conf, false);
    IHMSHandler handler = HiveMetaStore.newRetryingHMSHandler(base, conf);
    TServerSocket socket = new TServerSocket(new InetSocketAddress(host, port));
    TThreadPoolServer server =
        new TThreadPoolServer(
            new TThreadPoolServer.Args(socket)
                .processor(new TSetIpAddressProcessor<>(handler))
                .transportFactory(new TTransportFactory())
                .protocolFactory(new TBinaryProtocol.Factory())
                .minWorkerThreads(2)
                .maxWorkerThreads(64));
    Runtime.getRuntime().addShutdownHook(new Thread(server::stop, "metastore-stop"));
    System.out.println("metastore listening on " + host + ":" + port);
    System.out.flush();
    server.serve();
  }
}
