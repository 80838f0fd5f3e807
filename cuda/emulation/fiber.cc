#include "cuda/emulation/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <new>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#if defined(__x86_64__)
// Saves the callee-saved registers and the SSE / x87 control words on the current stack,
// stores the stack pointer in *saveStack, and continues on loadStack as saved by an
// earlier switch (or as laid out by Fiber::start).
extern "C" void hb_emulation_switch(void** saveStack, void* loadStack);
asm(R"(
  .pushsection .text
  .globl hb_emulation_switch
  .hidden hb_emulation_switch
  .type hb_emulation_switch, @function
hb_emulation_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size hb_emulation_switch, .-hb_emulation_switch
  .popsection
)");
#endif

namespace hb {
namespace cuda_emulation {

namespace {
thread_local Fiber* starting = nullptr;
}

struct Fiber::Native {
  char* memory = nullptr;  // guard page, then the stack
  size_t bytes = 0;
#if defined(__x86_64__)
  void* fiberStack = nullptr;
  void* schedulerStack = nullptr;
#else
  ucontext_t fiber;
  ucontext_t scheduler;
#endif
};

Fiber::Fiber(size_t stackBytes) : native_(new Native) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t bytes = (stackBytes + page - 1) / page * page + page;
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    delete native_;
    throw std::bad_alloc();
  }
  // An overflowing emulated thread faults on the guard page instead of writing over
  // another fiber's stack.
  mprotect(memory, page, PROT_NONE);
  native_->memory = static_cast<char*>(memory);
  native_->bytes = bytes;
}

Fiber::~Fiber() {
  munmap(native_->memory, native_->bytes);
  delete native_;
}

void Fiber::trampoline() {
  Fiber* self = starting;
  self->entry_(self->argument_);
  self->finished_ = true;
  self->suspend();
  std::abort();  // a finished fiber is never resumed before start()
}

void Fiber::start(void (*entry)(void*), void* argument) {
  entry_ = entry;
  argument_ = argument;
  finished_ = false;
#if defined(__x86_64__)
  // The frame hb_emulation_switch pops: control words, six registers, then `ret` into
  // the trampoline, which sees a zero return address with the stack aligned as after
  // a call.
  auto top = reinterpret_cast<uintptr_t>(native_->memory + native_->bytes) & ~uintptr_t(15);
  uint64_t* sp = reinterpret_cast<uint64_t*>(top);
  uint32_t mxcsr = 0;
  uint16_t fpuControl = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpuControl));
  sp[-1] = 0;
  sp[-2] = reinterpret_cast<uint64_t>(&Fiber::trampoline);
  for (int r = 3; r <= 8; ++r) sp[-r] = 0;
  sp[-9] = uint64_t(mxcsr) | (uint64_t(fpuControl) << 32);
  native_->fiberStack = sp - 9;
#else
  getcontext(&native_->fiber);
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  native_->fiber.uc_stack.ss_sp = native_->memory + page;
  native_->fiber.uc_stack.ss_size = native_->bytes - page;
  native_->fiber.uc_link = nullptr;
  makecontext(&native_->fiber, &Fiber::trampoline, 0);
#endif
}

void Fiber::resume() {
  starting = this;
#if defined(__x86_64__)
  hb_emulation_switch(&native_->schedulerStack, native_->fiberStack);
#else
  swapcontext(&native_->scheduler, &native_->fiber);
#endif
}

void Fiber::suspend() {
#if defined(__x86_64__)
  hb_emulation_switch(&native_->fiberStack, native_->schedulerStack);
#else
  swapcontext(&native_->fiber, &native_->scheduler);
#endif
}

}  // namespace cuda_emulation
}  // namespace hb
