package dev.paramserver.psctl.startup;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * Lays a Spring Boot executable jar out as plain jars, which class-data sharing and AOT caches need
 * (they hold no class that Boot's nested-jar loader loaded): {@code app/<jar's name>} with the
 * classes of {@code BOOT-INF/classes} and a manifest whose {@code Class-Path} names {@code
 * app/lib/*.jar} in the order of {@code BOOT-INF/classpath.idx}, each copied from {@code
 * BOOT-INF/lib}. What Spring Boot's {@code -Djarmode=tools extract} does for the services, for
 * psctl, which carries no Spring Boot tools.
 */
public final class BootJarLayout {
  private static final String CLASSES = "BOOT-INF/classes/";
  private static final String LIB = "BOOT-INF/lib/";
  private static final String INDEX = "BOOT-INF/classpath.idx";

  private BootJarLayout() {}

  /**
   * Extracts {@code bootJar} into {@code app}, starting {@code mainClass}.
   *
   * @throws IOException when the jar is no Boot jar (no {@value #INDEX}) or cannot be read
   */
  public static void extract(Path bootJar, Path app, String mainClass) throws IOException {
    Files.createDirectories(app.resolve("lib"));
    try (ZipFile zip = new ZipFile(bootJar.toFile())) {
      ZipEntry index = zip.getEntry(INDEX);
      if (index == null) {
        throw new IOException(bootJar + " is no Spring Boot executable jar (no " + INDEX + ")");
      }
      List<String> classPath = new ArrayList<>();
      for (String line : read(zip, index).split("\n")) {
        String name = line.trim().replaceFirst("^- ", "").replace("\"", "");
        if (!name.startsWith(LIB)) {
          continue;
        }
        ZipEntry lib = zip.getEntry(name);
        if (lib == null) {
          throw new IOException(bootJar + ": " + INDEX + " names " + name + ", which is missing");
        }
        String file = name.substring(LIB.length());
        try (InputStream in = zip.getInputStream(lib)) {
          Files.copy(in, app.resolve("lib").resolve(file));
        }
        classPath.add("lib/" + file);
      }
      Manifest manifest = new Manifest();
      Attributes main = manifest.getMainAttributes();
      main.put(Attributes.Name.MANIFEST_VERSION, "1.0");
      main.put(Attributes.Name.MAIN_CLASS, mainClass);
      main.put(Attributes.Name.CLASS_PATH, String.join(" ", classPath));
      try (OutputStream file = Files.newOutputStream(app.resolve(bootJar.getFileName()));
          JarOutputStream out = new JarOutputStream(file, manifest)) {
        Enumeration<? extends ZipEntry> entries = zip.entries();
        while (entries.hasMoreElements()) {
          ZipEntry e = entries.nextElement();
          if (!e.getName().startsWith(CLASSES) || e.getName().equals(CLASSES)) {
            continue;
          }
          out.putNextEntry(new JarEntry(e.getName().substring(CLASSES.length())));
          if (!e.isDirectory()) {
            try (InputStream in = zip.getInputStream(e)) {
              in.transferTo(out);
            }
          }
          out.closeEntry();
        }
      }
    }
  }

  private static String read(ZipFile zip, ZipEntry e) throws IOException {
    try (InputStream in = zip.getInputStream(e)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
