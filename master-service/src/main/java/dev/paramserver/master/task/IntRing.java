package dev.paramserver.master.task;

import java.util.Arrays;
import java.util.NoSuchElementException;

/** A FIFO queue of ints (task ids) on a growable ring buffer: no boxing for 100k tasks. */
final class IntRing {
  private int[] items;
  private int head;
  private int size;

  IntRing(int capacity) {
    items = new int[Math.max(4, capacity)];
  }

  IntRing copy() {
    IntRing c = new IntRing(0);
    c.items = items.clone();
    c.head = head;
    c.size = size;
    return c;
  }

  int size() {
    return size;
  }

  boolean isEmpty() {
    return size == 0;
  }

  void addLast(int value) {
    if (size == items.length) {
      int[] grown = new int[items.length * 2];
      for (int i = 0; i < size; i++) {
        grown[i] = items[(head + i) % items.length];
      }
      items = grown;
      head = 0;
    }
    items[(head + size) % items.length] = value;
    size++;
  }

  int removeFirst() {
    if (size == 0) {
      throw new NoSuchElementException("the todo queue is empty");
    }
    int v = items[head];
    head = (head + 1) % items.length;
    size--;
    return v;
  }

  void clear() {
    head = 0;
    size = 0;
  }

  /** The items, head first. */
  int[] toArray() {
    int[] out = new int[size];
    for (int i = 0; i < size; i++) {
      out[i] = items[(head + i) % items.length];
    }
    return out;
  }

  @Override
  public String toString() {
    return Arrays.toString(toArray());
  }
}
