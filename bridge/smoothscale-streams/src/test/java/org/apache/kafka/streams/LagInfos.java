package org.apache.kafka.streams;

/** LagInfo's constructor is package-private: tests make the values Kafka Streams would report from here. */
public final class LagInfos {
    private LagInfos() {}

    public static LagInfo of(long position, long endOffset) {
        return new LagInfo(position, endOffset);
    }
}
