package dev.paramserver.it;

import java.util.ArrayList;
import java.util.List;

/**
 * Simple commands of a shell snippet as the docs show them: continuation lines joined, comments
 * dropped, split at {@code ; && || |} and newlines, each command split into words with quotes
 * removed. Enough to find the program and the options a doc names; not a shell.
 */
final class ShellCommands {
  private ShellCommands() {}

  /** The simple commands of a snippet, each as its words; leading {@code VAR=value} kept. */
  static List<List<String>> parse(String snippet) {
    String text = snippet.replace("\\\n", " ");
    List<List<String>> commands = new ArrayList<>();
    List<String> words = new ArrayList<>();
    StringBuilder word = null;
    char quote = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (quote != 0) {
        if (c == quote) {
          quote = 0;
        } else {
          word.append(c);
        }
        continue;
      }
      if (c == '\'' || c == '"') {
        quote = c;
        if (word == null) {
          word = new StringBuilder();
        }
        continue;
      }
      if (c == '#' && word == null) {
        // a comment runs to the end of the line
        while (i + 1 < text.length() && text.charAt(i + 1) != '\n') {
          i++;
        }
        continue;
      }
      boolean separator = c == '\n' || c == ';' || c == '|' || c == '&';
      if (separator || Character.isWhitespace(c)) {
        if (word != null) {
          words.add(word.toString());
          word = null;
        }
        if (separator && !words.isEmpty()) {
          commands.add(words);
          words = new ArrayList<>();
        }
        continue;
      }
      if (word == null) {
        word = new StringBuilder();
      }
      word.append(c);
    }
    if (word != null) {
      words.add(word.toString());
    }
    if (!words.isEmpty()) {
      commands.add(words);
    }
    return commands;
  }

  /** The command's words without its leading {@code VAR=value} assignments and sudo/exec/time. */
  static List<String> program(List<String> command) {
    int i = 0;
    while (i < command.size()
        && (command.get(i).matches("[A-Za-z_][A-Za-z0-9_]*=.*")
            || List.of("sudo", "exec", "time").contains(command.get(i)))) {
      i++;
    }
    return command.subList(i, command.size());
  }

  /** The names of the leading {@code VAR=value} assignments. */
  static List<String> environment(List<String> command) {
    List<String> names = new ArrayList<>();
    for (String w : command) {
      if (w.matches("[A-Za-z_][A-Za-z0-9_]*=.*")) {
        names.add(w.substring(0, w.indexOf('=')));
      } else if (!List.of("sudo", "exec", "time").contains(w)) {
        break;
      }
    }
    return names;
  }
}
