package dev.paramserver.service;

/**
 * A check of a service's settings that needs more than binding (files that must exist, values that
 * depend on each other). Every bean of this type is created, and its {@link #check()} run, before
 * the etcd coordinator is, so a bad setting stops the service before it touches etcd.
 */
public interface StartupCheck {
  /**
   * @throws InvalidPropertyException naming the property and the problem
   */
  void check();
}
