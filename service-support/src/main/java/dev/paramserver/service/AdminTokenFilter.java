package dev.paramserver.service;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Lets a request to {@code /admin/**} through only with {@code Authorization: Bearer <token>}
 * matching {@code paramserver.admin.token} (compared in constant time). Otherwise 401 with {@code
 * {"error":"unauthorized","message":...}}. With no token configured every request is refused.
 */
final class AdminTokenFilter extends OncePerRequestFilter {
  private static final String BEARER = "Bearer ";

  private final byte[] expectedDigest;

  AdminTokenFilter(String token) {
    this.expectedDigest = token == null || token.isEmpty() ? null : sha256(token);
  }

  @Override
  protected void doFilterInternal(
      HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    String header = request.getHeader(HttpHeaders.AUTHORIZATION);
    if (expectedDigest == null) {
      refuse(response, "admin endpoints are disabled: set paramserver.admin.token to enable them");
    } else if (header == null || !header.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
      refuse(response, "missing 'Authorization: Bearer <token>' header");
    } else if (!MessageDigest.isEqual(
        expectedDigest, sha256(header.substring(BEARER.length()).trim()))) {
      refuse(response, "wrong admin token");
    } else {
      chain.doFilter(request, response);
    }
  }

  private static void refuse(HttpServletResponse response, String message) throws IOException {
    response.setStatus(HttpServletResponse.SC_UNAUTHORIZED);
    response.setHeader(HttpHeaders.WWW_AUTHENTICATE, "Bearer");
    response.setContentType(MediaType.APPLICATION_JSON_VALUE);
    response.setCharacterEncoding(StandardCharsets.UTF_8.name());
    response
        .getWriter()
        .write("{\"error\":\"unauthorized\",\"message\":\"" + message.replace("\"", "'") + "\"}");
  }

  /** Digests first, so the comparison takes the same time whatever the token's length. */
  private static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }
}
