package io.eventlake.cloudevents;

import java.util.Locale;

/**
 * The media-type rules of the binding, in one place for its receiver side ({@link
 * KafkaBinding}) and its sender side ({@link KafkaEncoder}): a content type's media type
 * without parameters, whether a content type means structured mode (3), the batch media
 * type or the JSON event format, and whether data under a media type is JSON or text.
 */
final class MediaTypes {
  static final String CLOUDEVENTS_MEDIA_PREFIX = "application/cloudevents";
  static final String JSON_FORMAT = "application/cloudevents+json";
  static final String BATCH_MEDIA_PREFIX = "application/cloudevents-batch";

  private MediaTypes() {}

  /**
   * Content mode (3): a {@code content-type} starting with {@code application/cloudevents}
   * (leading spaces and case aside) means structured mode; anything else, and no
   * content-type at all, binary mode.
   */
  static boolean isStructuredMode(String contentType) {
    return contentType != null
        && ltrimSpaces(contentType).toLowerCase(Locale.ROOT)
            .startsWith(CLOUDEVENTS_MEDIA_PREFIX);
  }

  /** The batch media type (3.3): the Kafka binding has no batch mode. */
  static boolean isBatch(String mediaType) {
    return mediaType.startsWith(BATCH_MEDIA_PREFIX);
  }

  /** The JSON event format ({@code application/cloudevents+json}), as a media type. */
  static boolean isJsonFormat(String mediaType) {
    return JSON_FORMAT.equals(mediaType);
  }

  /**
   * Whether an event's data is JSON, for {@code data_json}: its datacontenttype is a JSON
   * media type ({@code application/json}, {@code text/json}, any {@code +json} suffix),
   * or, in structured mode only, absent (JSON format 3.1). Binary mode has no default.
   */
  static boolean isJsonData(String contentMode, String datacontenttype) {
    if (datacontenttype == null) {
      return KafkaBinding.STRUCTURED.equals(contentMode);
    }
    return isJsonMediaType(datacontenttype);
  }

  /** JSON format 3.1: data is a JSON value when datacontenttype is JSON or absent. */
  static boolean isJsonMediaType(String datacontenttype) {
    if (datacontenttype == null) {
      return true;
    }
    String base = mediaType(datacontenttype);
    return base.equals("application/json") || base.equals("text/json") || base.endsWith("+json");
  }

  /** Media types whose data is text: {@code text/*} (not JSON) and XML. */
  static boolean isTextMediaType(String mediaType) {
    if (mediaType == null || isJsonMediaType(mediaType)) {
      return false;
    }
    String base = mediaType(mediaType);
    return base.startsWith("text/") || base.equals("application/xml") || base.endsWith("+xml");
  }

  /** The media type without parameters, trimmed and lowercase. */
  static String mediaType(String contentType) {
    int semicolon = contentType.indexOf(';');
    String base = semicolon < 0 ? contentType : contentType.substring(0, semicolon);
    return trimSpaces(base).toLowerCase(Locale.ROOT);
  }

  private static String ltrimSpaces(String text) {
    int start = 0;
    while (start < text.length() && text.charAt(start) == ' ') {
      start++;
    }
    return text.substring(start);
  }

  private static String trimSpaces(String text) {
    int end = text.length();
    while (end > 0 && text.charAt(end - 1) == ' ') {
      end--;
    }
    return ltrimSpaces(text.substring(0, end));
  }
}
