package dev.paramserver.adminapi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.ObjectMapper;

/**
 * {@link JsonRecords} reads what Jackson's data binding (the admin client's fallback) reads: every
 * component of every record of {@link JobView}, filled by reflection so that a component added
 * later is covered too, and the edge cases of the answers (nulls, missing and unknown fields,
 * escapes, fractions, non-finite numbers); what it cannot read the same way it refuses.
 */
class JsonRecordsTest {
  private static final ObjectMapper JSON = AdminClient.json();
  private int next = 1;

  @Test
  void aJobViewWithEveryComponentSet_readsAsJacksonReadsIt() throws Exception {
    JobView full = (JobView) instance(JobView.class);
    String text = JSON.writeValueAsString(full);

    JobView read = JsonRecords.read(text, JobView.class);

    assertThat(read).isEqualTo(full).isEqualTo(JSON.readValue(text, JobView.class));
    assertThat(read.passes()).hasSize(2);
    assertThat(read.scaling().moves().get(1).stallMs()).isNotNull();
  }

  @Test
  void aServiceStatus_readsAsJacksonReadsIt() throws Exception {
    String text =
        "{\"role\":\"master\",\"state\":\"LEADER\",\"identity\":\"h:1\",\"leader\":true,"
            + "\"version\":\"1.2.0\",\"job\":{\"state\":\"RUNNING\",\"passes\":[1,2]}}";
    assertThat(JsonRecords.read(text, ServiceStatus.class))
        .isEqualTo(JSON.readValue(text, ServiceStatus.class))
        .extracting(ServiceStatus::commit)
        .isNull();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "{}",
        " { \"leader\" : true , \"events\" : [ ] } ",
        "{'leader':true,'job':{'state':'RUNNING','pass':3.9,'datasetRecords':1.0e3,"
            + "'etaSeconds':null,'progress':1,'tasks':null},'passes':null}",
        "{'leader':false,'job':{'state':null,'pass':1},'events':[{'kind':'a\\\"b\\\\c\\/d\\u00e9"
            + "\\ud83d\\ude00\\n\\t'}]}",
        "{'job':{'state':'S','recordsPerSecond':'NaN','elapsedSeconds':'-Infinity'},"
            + "'unknown':{'deep':[1,{'x':[]}],'n':-0.5e-3},'series':{'trainLoss':[null,1,2.5]}}",
        "{'time':-12,'job':{'state':'S','pass':-2147483648,'startedMs':9007199254740993}}",
        "{'pservers':[{'index':1,'hot':true,'applyP99Ms':0,'checkpointAgeSeconds':-1E2}]}"
      })
  void anAnswer_readsAsJacksonReadsIt(String answer) throws Exception {
    String text = answer.replace('\'', '"');
    assertThat(JsonRecords.read(text, JobView.class))
        .isEqualTo(JSON.readValue(text, JobView.class));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "{'job':{'state':'S','pass':'3'}}", // Jackson coerces a string to a number
        "{'job':{'state':'S','pass':2147483648}}", // out of an int's range
        "{'job':{'state':'S','datasetRecords':99999999999999999999}}",
        "{'job':{'state':7}}", // Jackson coerces a number to a string
        "{'leader':'true'}",
        "{'events':{}}",
        "{'job':[]}",
        "{'leader':true} x",
        "{'leader':true,}",
        "{'time':01}",
        "{'time':1.}",
        "{'time':+1}",
        "{'job':{'state':'S\\x'}}",
        "{'events':[{'kind':'unterminated",
        "[1]"
      })
  void anAnswerItCannotReadAsJackson_isRefused(String answer) {
    assertThatThrownBy(() -> JsonRecords.read(answer.replace('\'', '"'), JobView.class))
        .isInstanceOf(IllegalArgumentException.class);
  }

  /** A record of {@code type} with every component set, lists of two, values all different. */
  private Object instance(Type type) throws Exception {
    if (type instanceof ParameterizedType p && p.getRawType() == List.class) {
      Type element = p.getActualTypeArguments()[0];
      return List.of(instance(element), instance(element));
    }
    if (type instanceof ParameterizedType p && p.getRawType() == Map.class) {
      Type value = p.getActualTypeArguments()[1];
      return Map.of("k" + next++, instance(value), "k" + next++, instance(value));
    }
    Class<?> c = (Class<?>) type;
    int n = next++;
    if (c == String.class) {
      return "s" + n + "\u00e9\"\\";
    } else if (c == int.class || c == Integer.class) {
      return n;
    } else if (c == long.class || c == Long.class) {
      return 1_000_000_000_000L + n;
    } else if (c == double.class || c == Double.class) {
      return n + 0.25;
    } else if (c == boolean.class || c == Boolean.class) {
      return n % 2 == 0;
    }
    assertThat(c.isRecord()).as("a type JsonRecords reads: %s", c).isTrue();
    RecordComponent[] components = c.getRecordComponents();
    Class<?>[] types = new Class<?>[components.length];
    Object[] args = new Object[components.length];
    for (int i = 0; i < components.length; i++) {
      types[i] = components[i].getType();
      args[i] = instance(components[i].getGenericType());
    }
    return c.getDeclaredConstructor(types).newInstance(args);
  }
}
