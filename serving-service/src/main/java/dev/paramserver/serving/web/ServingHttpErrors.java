package dev.paramserver.serving.web;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.HttpMediaTypeNotSupportedException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * The one mapping from the serving replica's errors to HTTP statuses, for this package's endpoints.
 * The body carries the same {@link ErrorReason} and message as the gRPC call's status: a request
 * the replica cannot answer as asked (unknown table or parameter, wrong width, too many ids,
 * malformed JSON) is 400; a replica not serving yet, behind the request's {@code min_version}, or
 * (predictions) without the job's model description yet, is 503 (retry, or ask another replica).
 */
@RestControllerAdvice(basePackageClasses = ServingHttpErrors.class)
final class ServingHttpErrors {

  /**
   * The body of an error answer.
   *
   * @param error the reason, as ErrorReason in errors.proto
   * @param message what is wrong and what to do, for a person
   * @param metadata what the gRPC status's ErrorInfo carries (for example {@code shard}, {@code
   *     wanted} and {@code served} on VERSION_NOT_REACHED)
   */
  record Error(String error, String message, Map<String, String> metadata) {}

  static HttpStatus statusFor(ErrorReason reason) {
    return switch (reason) {
      case BAD_ARGUMENT, UNKNOWN_PARAMETER, SHAPE_MISMATCH, TOO_LARGE, UNSUPPORTED_DTYPE ->
          HttpStatus.BAD_REQUEST;
      case NOT_INITIALIZED, VERSION_NOT_REACHED, SHUTTING_DOWN, NO_MODEL ->
          HttpStatus.SERVICE_UNAVAILABLE;
      default -> HttpStatus.INTERNAL_SERVER_ERROR;
    };
  }

  @ExceptionHandler(ServiceException.class)
  ResponseEntity<Error> serviceException(ServiceException e) {
    return ResponseEntity.status(statusFor(e.reason()))
        .body(new Error(e.reason().name(), String.valueOf(e.getMessage()), e.metadata()));
  }

  @ExceptionHandler(HttpMessageNotReadableException.class)
  ResponseEntity<Error> unreadable(HttpMessageNotReadableException e) {
    // the parser's message names the field and the position; its cause's class is not sent
    String detail = e.getMostSpecificCause().getMessage();
    return ResponseEntity.badRequest()
        .body(
            new Error(
                ErrorReason.BAD_ARGUMENT.name(),
                "the request body is not the JSON this call takes: "
                    + (detail == null ? "unreadable" : firstLine(detail)),
                Map.of()));
  }

  @ExceptionHandler(HttpMediaTypeNotSupportedException.class)
  ResponseEntity<Error> mediaType(HttpMediaTypeNotSupportedException e) {
    return ResponseEntity.status(HttpStatus.UNSUPPORTED_MEDIA_TYPE)
        .body(
            new Error(
                ErrorReason.BAD_ARGUMENT.name(),
                "send the request as JSON (Content-Type: application/json), got "
                    + e.getContentType(),
                Map.of()));
  }

  private static String firstLine(String s) {
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }
}
