package dev.paramserver.service;

import dev.paramserver.etcd.Coordinator;
import java.util.LinkedHashSet;
import java.util.Set;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Makes the etcd coordinator depend on every {@code @ConfigurationProperties} bean and every {@link
 * StartupCheck}: the settings are bound, validated and checked before the first etcd connection, so
 * a bad value stops the service before it touches etcd.
 */
final class ConfigurationFirst implements BeanFactoryPostProcessor {
  @Override
  public void postProcessBeanFactory(ConfigurableListableBeanFactory factory)
      throws BeansException {
    Set<String> first = new LinkedHashSet<>();
    for (String name : factory.getBeanNamesForAnnotation(ConfigurationProperties.class)) {
      first.add(name);
    }
    for (String name : factory.getBeanNamesForType(StartupCheck.class, true, false)) {
      first.add(name);
    }
    for (String name : factory.getBeanNamesForType(Coordinator.class, true, false)) {
      BeanDefinition def = factory.getBeanDefinition(name);
      Set<String> deps = new LinkedHashSet<>();
      if (def.getDependsOn() != null) {
        deps.addAll(java.util.List.of(def.getDependsOn()));
      }
      for (String f : first) {
        if (!f.equals(name)) {
          deps.add(f);
        }
      }
      def.setDependsOn(deps.toArray(String[]::new));
    }
  }
}
