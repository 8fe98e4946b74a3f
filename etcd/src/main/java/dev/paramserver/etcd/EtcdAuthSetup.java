package dev.paramserver.etcd;

import io.etcd.jetcd.Auth;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.auth.Permission;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Turns authentication on in an etcd a job owns (the chart's bundled etcd), idempotently: a {@code
 * root} user with role {@code root}, a job user whose role ({@code paramserver-<job>}) may read and
 * write the job's keys ({@code /paramserver/<job>/}) and nothing else, then {@code auth enable}.
 * Run again on an etcd whose authentication is on, it logs in as root and makes the users, role,
 * permission and passwords what they should be (a changed password takes effect), so it may run at
 * every start of the etcd pod.
 */
public final class EtcdAuthSetup {
  /** etcd's superuser and its role. */
  public static final String ROOT = "root";

  private final List<String> endpoints;
  private final String job;
  private final JobKeys keys;
  private final Duration timeout;

  /**
   * @param endpoints client URLs of etcd
   * @param job the job whose keys the job user may use
   * @param timeout the timeout of each call
   */
  public EtcdAuthSetup(List<String> endpoints, String job, Duration timeout) {
    if (endpoints.isEmpty()) {
      throw new IllegalArgumentException("etcd endpoints are empty: give at least one client URL");
    }
    this.endpoints = List.copyOf(endpoints);
    this.job = job;
    this.keys = new JobKeys(job);
    this.timeout = timeout;
  }

  /** The job user's role name. */
  public String roleName() {
    return "paramserver-" + job;
  }

  /**
   * Makes the users and the role, then enables authentication if it is off.
   *
   * @return true if this call turned authentication on, false if it was on already
   * @throws CoordinationException when etcd does not answer, or refuses root's password
   */
  public boolean ensure(String rootPassword, String user, String password) {
    if (user.isEmpty() || ROOT.equals(user)) {
      throw new IllegalArgumentException(
          "the job's etcd user must be named and not be root, got '" + user + "'");
    }
    if (rootPassword.isEmpty() || password.isEmpty()) {
      throw new IllegalArgumentException("the etcd passwords must not be empty");
    }
    try (Client anonymous = builder().build()) {
      Auth auth = anonymous.getAuthClient();
      boolean off;
      try {
        call(auth.userList());
        off = true;
      } catch (CoordinationException e) {
        if (!authIsOn(e)) {
          throw e;
        }
        off = false;
      }
      if (off) {
        users(auth, rootPassword, user, password, true);
        call(auth.authEnable());
        return true;
      }
    }
    try (Client root = builder().user(bytes(ROOT)).password(bytes(rootPassword)).build()) {
      // root logged in with this password: changing it again would revoke this client's token
      users(root.getAuthClient(), rootPassword, user, password, false);
      return false;
    }
  }

  private void users(
      Auth auth, String rootPassword, String user, String password, boolean setRoot) {
    List<String> roles = call(auth.roleList()).getRoles();
    List<String> users = call(auth.userList()).getUsers();
    if (setRoot) {
      setUser(auth, users, ROOT, rootPassword);
    }
    if (!roles.contains(ROOT)) {
      call(auth.roleAdd(bytes(ROOT)));
    }
    call(auth.userGrantRole(bytes(ROOT), bytes(ROOT)));
    String role = roleName();
    if (!roles.contains(role)) {
      call(auth.roleAdd(bytes(role)));
    }
    String prefix = keys.prefix();
    call(
        auth.roleGrantPermission(
            bytes(role), bytes(prefix), bytes(prefixEnd(prefix)), Permission.Type.READWRITE));
    setUser(auth, users, user, password);
    call(auth.userGrantRole(bytes(user), bytes(role)));
  }

  private void setUser(Auth auth, List<String> users, String name, String password) {
    if (users.contains(name)) {
      call(auth.userChangePassword(bytes(name), bytes(password)));
    } else {
      call(auth.userAdd(bytes(name), bytes(password)));
    }
  }

  /**
   * The end of the key range with this prefix: its last character plus one (the prefix ends in /).
   */
  static String prefixEnd(String prefix) {
    char last = prefix.charAt(prefix.length() - 1);
    return prefix.substring(0, prefix.length() - 1) + (char) (last + 1);
  }

  /** An anonymous call refused because authentication is on. */
  private static boolean authIsOn(CoordinationException e) {
    String m = String.valueOf(e.getCause() == null ? e : e.getCause()).toLowerCase(Locale.ROOT);
    return m.contains("user name is empty")
        || m.contains("permission denied")
        || m.contains("invalid auth token");
  }

  private ClientBuilder builder() {
    return Client.builder()
        .endpoints(endpoints.stream().map(String::trim).toArray(String[]::new))
        .connectTimeout(timeout)
        .retryMaxDuration(timeout);
  }

  private <T> T call(CompletableFuture<T> future) {
    try {
      return future.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CoordinationException("interrupted while setting up etcd authentication", e);
    } catch (ExecutionException e) {
      throw new CoordinationException(
          "etcd at " + endpoints + " refused an authentication set-up call: " + e.getCause(),
          e.getCause());
    } catch (TimeoutException e) {
      throw new CoordinationException(
          "etcd at " + endpoints + " did not answer within " + timeout, e);
    }
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
