package dev.paramserver.trainer.config;

/** How a trainer coordinates with its job ({@code paramserver.trainer.coordination.mode}). */
public enum CoordinationMode {
  /** Through etcd, itself: its own lease, registration and lock keys. */
  ETCD,
  /** Through the leading master's Coordination service: no etcd client at all. */
  MASTER
}
