package io.eventlake.cloudevents;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * What a republish hop does to every record besides encoding it, in this order: header
 * to extension (on the value), drop headers, attribute to header, literal headers, the
 * trail's entry. Transforms never touch {@code ce_*} or {@code content-type}: the
 * Python side refuses such requests before anything runs.
 *
 * <p>This class holds the hop's options, as the Python side passes them ({@link
 * #fromJson}); {@link KafkaEncoder} applies them and {@link RoutingTrail} writes the
 * trail's entry.
 */
public final class Hop implements Serializable {
  private static final long serialVersionUID = 1L;

  /** No transforms and no trail. */
  public static final Hop NONE = new Hop(List.of(), List.of(), List.of(), List.of(), null, null);

  /** (header, extension): the first such header becomes the extension if it is new. */
  final List<Pair> headerAttributes;

  /** Header names removed (every occurrence). */
  final Set<String> dropHeaders;

  /** (attribute, header): the attribute's text appended as a header when present. */
  final List<Pair> attributeHeaders;

  /** (name, text): headers appended to every record. */
  final List<Pair> insertHeaders;

  /** The routing trail's header; null for no trail. */
  final String trailHeader;

  /** The target topic, as the trail's entries name it. */
  final String target;

  /** Two strings. */
  public record Pair(String first, String second) implements Serializable {}

  public Hop(List<Pair> headerAttributes, List<String> dropHeaders,
      List<Pair> attributeHeaders, List<Pair> insertHeaders, String trailHeader,
      String target) {
    this.headerAttributes = List.copyOf(headerAttributes);
    this.dropHeaders = Set.copyOf(dropHeaders);
    this.attributeHeaders = List.copyOf(attributeHeaders);
    this.insertHeaders = List.copyOf(insertHeaders);
    this.trailHeader = trailHeader;
    this.target = target;
  }

  /**
   * A hop from its JSON text (what the Python side passes as a constant), e.g. {@code
   * {"header_attributes":[["origin","origin"]],"drop_headers":["debug"],
   * "attribute_headers":[["subject","x-subject"]],"insert_headers":[["team","x"]],
   * "trail_header":"eventlake-trail","target":"orders"}}; members may be left out.
   *
   * @throws IllegalArgumentException when the text is not such an object
   */
  public static Hop fromJson(String text) {
    List<Pair> headerAttributes = new ArrayList<>();
    List<String> dropHeaders = new ArrayList<>();
    List<Pair> attributeHeaders = new ArrayList<>();
    List<Pair> insertHeaders = new ArrayList<>();
    String trailHeader = null;
    String target = null;
    try (JsonParser json = JsonEvent.FACTORY.createParser(text)) {
      expect(json.nextToken(), JsonToken.START_OBJECT);
      while (json.nextToken() == JsonToken.FIELD_NAME) {
        String name = json.currentName();
        JsonToken token = json.nextToken();
        switch (name) {
          case "header_attributes" -> readPairs(json, token, headerAttributes);
          case "attribute_headers" -> readPairs(json, token, attributeHeaders);
          case "insert_headers" -> readPairs(json, token, insertHeaders);
          case "drop_headers" -> {
            expect(token, JsonToken.START_ARRAY);
            while (json.nextToken() == JsonToken.VALUE_STRING) {
              dropHeaders.add(json.getText());
            }
            expect(json.currentToken(), JsonToken.END_ARRAY);
          }
          case "trail_header" -> trailHeader = token == JsonToken.VALUE_NULL ? null
              : stringOf(json, token);
          case "target" -> target = token == JsonToken.VALUE_NULL ? null
              : stringOf(json, token);
          default -> throw new IOException("unknown member " + name);
        }
      }
      if (json.nextToken() != null) {
        throw new IOException("more than one JSON value");
      }
    } catch (IOException e) {
      throw new IllegalArgumentException("not a republish hop: " + e.getMessage(), e);
    }
    if (trailHeader != null && target == null) {
      throw new IllegalArgumentException("a republish hop with a trail needs its target");
    }
    return new Hop(headerAttributes, dropHeaders, attributeHeaders, insertHeaders,
        trailHeader, target);
  }

  private static void readPairs(JsonParser json, JsonToken token, List<Pair> pairs)
      throws IOException {
    expect(token, JsonToken.START_ARRAY);
    while (json.nextToken() == JsonToken.START_ARRAY) {
      String first = stringOf(json, json.nextToken());
      String second = stringOf(json, json.nextToken());
      expect(json.nextToken(), JsonToken.END_ARRAY);
      pairs.add(new Pair(first, second));
    }
    expect(json.currentToken(), JsonToken.END_ARRAY);
  }

  private static String stringOf(JsonParser json, JsonToken token) throws IOException {
    expect(token, JsonToken.VALUE_STRING);
    return json.getText();
  }

  private static void expect(JsonToken token, JsonToken wanted) throws IOException {
    if (token != wanted) {
      throw new IOException("expected " + wanted + ", got " + token);
    }
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof Hop that
        && headerAttributes.equals(that.headerAttributes)
        && dropHeaders.equals(that.dropHeaders)
        && attributeHeaders.equals(that.attributeHeaders)
        && insertHeaders.equals(that.insertHeaders)
        && java.util.Objects.equals(trailHeader, that.trailHeader)
        && java.util.Objects.equals(target, that.target);
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(headerAttributes, dropHeaders, attributeHeaders,
        insertHeaders, trailHeader, target);
  }

  @Override
  public String toString() {
    return "Hop(headerAttributes=" + headerAttributes + ", dropHeaders=" + dropHeaders
        + ", attributeHeaders=" + attributeHeaders + ", insertHeaders=" + insertHeaders
        + ", trailHeader=" + trailHeader + ", target=" + target + ")";
  }

  boolean needsStructuredMembers() {
    return !headerAttributes.isEmpty();
  }

  boolean hasTrail() {
    return trailHeader != null;
  }
}
