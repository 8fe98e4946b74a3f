/**
 * The pserver application: {@code PserverApplication} and the wiring of every package ({@code
 * PserverConfiguration}, the Netty gRPC server's tuning and the shard's beans; {@code
 * PserverProperties}, every {@code paramserver.pserver.*} property). The shard's domain is in
 * pserver-core ({@code shard}, {@code role}, {@code sparse}, {@code wal}, {@code checkpoint}); the
 * packages here adapt it to gRPC, HTTP, etcd and Kubernetes.
 */
package dev.paramserver.pserver;
