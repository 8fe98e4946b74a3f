/**
 * This pserver's place in the job: {@code ShardRegistration} (a Spring lifecycle, door for Spring
 * and the admin endpoints) claims an index or a backup's place in etcd under a lease, asks {@code
 * ShardLifecycle} for each move, loads the claimed index's state and claims again when the lease is
 * lost; {@code RegistrationState} is its own state with checked moves. It keeps no copy of the
 * index: the lifecycle holds it.
 */
package dev.paramserver.pserver.registration;
