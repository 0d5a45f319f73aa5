package io.smoothscale.streams;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens and drops a throwaway RocksDB once, when the bridge starts. Otherwise a pod's first state store pays
 * for RocksDB's native library and environment (about 1 s measured on a busy machine) in its stream thread,
 * as it creates its first warmup; meanwhile that thread does not rejoin the group, so the group's follow-up
 * rebalance, and with it every task moving between other pods, waits too.
 */
final class RocksDbWarmup {
    private static final Logger LOG = LoggerFactory.getLogger(RocksDbWarmup.class);

    private RocksDbWarmup() {}

    static void run() {
        Path dir = null;
        try {
            dir = Files.createTempDirectory("smoothscale-rocksdb-warmup");
            try (Options options = new Options().setCreateIfMissing(true);
                 RocksDB db = RocksDB.open(options, dir.toString())) {
                db.put(new byte[] {0}, new byte[] {0});
            }
        } catch (IOException | RocksDBException | RuntimeException error) {
            LOG.warn("RocksDB warm-up failed (the first state store loads it instead): {}", error.toString());
        } finally {
            if (dir != null) {
                delete(dir);
            }
        }
    }

    private static void delete(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException error) {
            LOG.debug("Could not delete {}: {}", dir, error.toString());
        }
    }
}
