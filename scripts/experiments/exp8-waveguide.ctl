; SPDX-License-Identifier: GPL-2.0
; Experiment 8's application: meep (Debian's meep-openmpi, unmodified)
; propagating a continuous wave down a dielectric waveguide in a 2-D cell
; of sx by 8, at resolution res, for `until` time units.  meep splits the
; cell among the ranks along x; every time step each rank exchanges the
; fields at its chunk's borders with its neighbours.
;
;   mpirun ... meep sx=32 res=5 until=10 exp8-waveguide.ctl
(define-param sx 32)
(define-param res 5)
(define-param until 10)
(set! geometry-lattice (make lattice (size sx 8 no-size)))
(set! geometry (list (make block (center 0 0) (size infinity 1 infinity)
                           (material (make dielectric (epsilon 12))))))
(set! sources (list (make source (src (make continuous-src (frequency 0.15)))
                          (component Ez) (center (+ (/ sx -2) 2) 0))))
(set! pml-layers (list (make pml (thickness 1.0))))
(set! resolution res)
(run-until until)
